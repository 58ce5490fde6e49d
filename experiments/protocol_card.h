// How a cell was run, as one line (its protocol card) and its method's parameters, and the
// report's Protocol section built from them.
#ifndef FGL_EXPERIMENTS_PROTOCOL_CARD_H_
#define FGL_EXPERIMENTS_PROTOCOL_CARD_H_

#include <map>
#include <string>
#include <utility>

#include "experiments/proto/experiment.pb.h"
#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"

namespace fgl::experiments {

// How a cell was run, in one line: evaluation protocol, model, split, partitioner, schedule and
// optimiser (dataset and clients are the column's).
std::string ProtocolCard(const proto::Experiment& resolved);
// The method's typed parameters as set, e.g. "fedtad { reliability_noise: 0.1 }"; "" when none.
std::string MethodParamsText(const proto::Experiment& resolved);

// The protocol shared by most cells, then each row's own: its method parameters, and its cards
// where they differ from the shared one (per column when only some columns differ). "" when no
// cell has a card.
std::string ProtocolSection(const proto::Table& t,
                            const std::map<std::pair<std::string, std::string>, CellResult>& cells);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_PROTOCOL_CARD_H_
