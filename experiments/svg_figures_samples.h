// Figures drawn from inputs that strain the layout (long titles and labels, 27 columns, a dozen
// series, tiny and narrow ranges, markup characters): svg_figures_test checks their geometry and
// svg_render_test renders them (write_sample_figures), beside the committed reports' figures.
#ifndef FGL_EXPERIMENTS_SVG_FIGURES_SAMPLES_H_
#define FGL_EXPERIMENTS_SVG_FIGURES_SAMPLES_H_

#include <string>
#include <utility>
#include <vector>

namespace fgl::experiments {

// (file name, SVG) for each sample, every one non-empty.
std::vector<std::pair<std::string, std::string>> SampleFigures();

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_SVG_FIGURES_SAMPLES_H_
