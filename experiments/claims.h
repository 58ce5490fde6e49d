// The report's Claims section: each of the paper's claims judged on our cells (paired-seed
// intervals for gains and orderings, our means otherwise) and on the paper's own printed means.
#ifndef FGL_EXPERIMENTS_CLAIMS_H_
#define FGL_EXPERIMENTS_CLAIMS_H_

#include <map>
#include <string>
#include <utility>

#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

// One line per claim of `t` with its verdict; "" when the table lists no claims.
std::string ClaimsSection(const proto::Table& t,
                          const std::map<std::pair<std::string, std::string>, CellResult>& cells);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_CLAIMS_H_
