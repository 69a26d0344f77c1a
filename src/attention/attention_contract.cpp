// attention/attention_contract.cpp — names of graph-support levels.
#include "attention/attention_contract.h"

namespace fg {

const char* graph_support_name(GraphSupport support) {
  switch (support) {
    case GraphSupport::kAlways: return "always";
    case GraphSupport::kUniformDecode: return "uniform_decode";
    case GraphSupport::kNever: return "never";
  }
  return "unknown";
}

}  // namespace fg
