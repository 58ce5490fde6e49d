// "testing_majority": a tiny deterministic federated method for fl's own tests, so that the
// runtime is tested without any real method. Each client's model is the class distribution of its
// training labels, slightly perturbed by the round's seed (so that seeds matter); the server
// averages the distributions by node count; every node is predicted as the most likely class.
#ifndef FGL_FL_TESTING_MAJORITY_METHOD_H_
#define FGL_FL_TESTING_MAJORITY_METHOD_H_

namespace fgl::fl::testing {

inline constexpr char kMajorityMethod[] = "testing_majority";

}  // namespace fgl::fl::testing

#endif  // FGL_FL_TESTING_MAJORITY_METHOD_H_
