// bench/kernels/step_breakdown.cpp — prefix replays of a captured chain (see step_breakdown.h).
#include "bench/kernels/step_breakdown.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>

#include "bench/common/cuda_timing.h"
#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace fg::bench {

namespace {

// "void fg::cuda::(anonymous namespace)::rms_norm_kernel<true>(...)" -> "rms_norm_kernel<true>".
std::string short_kernel_name(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                        &std::free);
  std::string name = status == 0 && demangled ? demangled.get() : mangled;
  const std::string anonymous = "(anonymous namespace)::";
  for (size_t at; (at = name.find(anonymous)) != std::string::npos;) name.erase(at, anonymous.size());
  int depth = 0;  // cut the parameter list: the first '(' outside template arguments
  for (size_t i = 0; i < name.size(); ++i) {
    depth += name[i] == '<' ? 1 : name[i] == '>' ? -1 : 0;
    if (name[i] == '(' && depth == 0) {
      name.resize(i);
      break;
    }
  }
  // Drop the return type and the namespaces: everything up to the last "::" before the template
  // arguments.
  const size_t scope = name.rfind("::", std::min(name.find('<'), name.size()));
  if (scope != std::string::npos) name.erase(0, scope + 2);
  return name;
}

// A node's row name and its kernel's registers per thread (-1 where unknown).
struct NodeKernel {
  std::string name;
  int registers = -1;
};

NodeKernel node_kernel(cudaGraphNode_t node) {
  cudaGraphNodeType type{};
  FG_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
  if (type != cudaGraphNodeTypeKernel) return {fmt::format("(graph node of type {})", static_cast<int>(type))};
  cudaKernelNodeParams params{};
  // A library's kernels (cuBLASLt's, launched from its own module) cannot be looked up through
  // the runtime: they share one row.
  if (const cudaError_t e = cudaGraphKernelNodeGetParams(node, &params); e == cudaErrorInvalidDeviceFunction) {
    (void)cudaGetLastError();
    return {"(a library's kernel: cuBLASLt)"};
  } else {
    FG_CUDA_CHECK(e);
  }
  const char* name = nullptr;
  FG_CUDA_CHECK(cudaFuncGetName(&name, params.func));
  cudaFuncAttributes attributes{};
  FG_CUDA_CHECK(cudaFuncGetAttributes(&attributes, params.func));
  return {short_kernel_name(name), attributes.numRegs};
}

// The graph's nodes in dependency order; fails unless each node has at most one dependency and
// one node has none (a chain, as capturing one stream gives).
std::vector<cudaGraphNode_t> chain_order(cudaGraph_t graph) {
  size_t count = 0;
  FG_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  FG_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::map<cudaGraphNode_t, cudaGraphNode_t> next;  // dependency -> its dependent
  cudaGraphNode_t first = nullptr;
  for (cudaGraphNode_t node : nodes) {
    size_t deps = 0;
    FG_CUDA_CHECK(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &deps));
    FG_CHECK(deps <= 1, "step breakdown: the captured step is not a chain (a node has {} dependencies)", deps);
    if (deps == 0) {
      FG_CHECK(first == nullptr, "step breakdown: the captured step is not a chain (two first nodes)");
      first = node;
      continue;
    }
    cudaGraphNode_t dependency = nullptr;
    cudaGraphEdgeData edge{};
    FG_CUDA_CHECK(cudaGraphNodeGetDependencies(node, &dependency, &edge, &deps));
    FG_CHECK(next.emplace(dependency, node).second, "step breakdown: the captured step is not a chain (a fork)");
  }
  std::vector<cudaGraphNode_t> order;
  for (cudaGraphNode_t node = first; node != nullptr;) {
    order.push_back(node);
    auto it = next.find(node);
    node = it == next.end() ? nullptr : it->second;
  }
  FG_CHECK(order.size() == nodes.size(), "step breakdown: the captured step is not one chain");
  return order;
}

// Median replay time, in microseconds, of the graph of order's first `keep` nodes.
double prefix_us(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& order, size_t keep, cudaStream_t stream,
                 int reps) {
  cudaGraph_t prefix = nullptr;
  FG_CUDA_CHECK(cudaGraphClone(&prefix, graph));
  for (size_t i = order.size(); i-- > keep;) {  // from the end: a node's dependents go first
    cudaGraphNode_t clone = nullptr;
    FG_CUDA_CHECK(cudaGraphNodeFindInClone(&clone, order[i], prefix));
    FG_CUDA_CHECK(cudaGraphDestroyNode(clone));
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, prefix, 0);
  cudaGraphDestroy(prefix);
  FG_CUDA_CHECK(made);
  const double us = median_graph_launch_us(exec, stream, reps);
  cudaGraphExecDestroy(exec);
  return us;
}

}  // namespace

StepBreakdown breakdown_captured_step(cudaStream_t stream, const std::function<void()>& work, int reps) {
  FG_CHECK(reps >= 1, "step breakdown: reps must be positive, got {}", reps);
  FG_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  try {
    work();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);  // unchecked: the work's error is the one to report
    if (broken != nullptr) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t graph = nullptr;
  FG_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> owned(graph, &cudaGraphDestroy);
  const std::vector<cudaGraphNode_t> order = chain_order(graph);

  StepBreakdown result;
  std::map<std::string, size_t> index;  // name -> its row in result.kernels
  double before = 0.0;                  // the empty prefix takes no time
  for (size_t k = 1; k <= order.size(); ++k) {
    const double now = prefix_us(graph, order, k, stream, reps);
    const NodeKernel kernel = node_kernel(order[k - 1]);
    auto [it, added] = index.emplace(kernel.name, result.kernels.size());
    if (added) result.kernels.push_back({kernel.name, 0, 0.0, kernel.registers});
    KernelShare& share = result.kernels[it->second];
    share.launches += 1;
    share.us += now - before;
    before = now;
  }
  result.step_us = before;
  return result;
}

}  // namespace fg::bench
