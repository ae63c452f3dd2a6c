// uts: the Unbalanced Tree Search benchmark (Olivier et al., "UTS: An Unbalanced Tree Search
// Benchmark", LCPC 2006), counting the nodes of an implicit tree whose shape no scheduler can
// predict. Each node is a 20-byte SHA-1 state (sha1.hpp):
//   - the root's state is the digest of 16 zero bytes and the root seed (4 bytes, big-endian);
//   - child i's state is the digest of the parent's 20 bytes and i (4 bytes, big-endian);
//   - a node's random number is bytes 16..19 of its state, big-endian, top bit cleared, and
//     u = that / 2^31 is its uniform draw in [0, 1).
// Two trees of the reference suite:
//   T1 (-t 1 -a 3 -d 10 -b 4 -r 19): geometric, FIXED shape: at depths 0 to 9 every node draws its
//      child count from a geometric law of mean 4, floor(log(1 - u) / log(1 - p)) with
//      p = 1 / (1 + 4), at depth 10 none; at most 100 children. 4,130,071 nodes.
//   T3 (-t 0 -b 2000 -q 0.124875 -m 8 -r 42): binomial: the root has 2000 children, every other
//      node 8 children when u < 0.124875, else none. 4,112,897 nodes, 1,572 levels deep.
// The parallel traversals make one task per child (a task group per node) and add up the
// children's counts, each child writing its own slot: the shape the suites time.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>

#include <oneapi/tbb/task_group.h>

#include "harness/classic/no_scheduler.hpp"
#include "harness/classic/sha1.hpp"
#ifdef WSLAB_CLASSIC_LIBFORK
#include <libfork.hpp>
#endif

namespace classic::uts {

struct Tree {
  enum class Kind { binomial, geometric_fixed } kind;
  double b0;      // root branching (binomial) or mean branching (geometric)
  int max_depth;  // geometric: nodes at this depth have no children
  double q;       // binomial: probability that a non-root node has m children
  int m;          // binomial: children of a non-leaf
  int root_seed;
  std::uint64_t nodes;  // the published node count: the result check
  int depth;            // the published depth (checked by --self-test)
};

inline constexpr Tree kT1{Tree::Kind::geometric_fixed, 4.0, 10, 0.0, 0, 19, 4130071, 10};
inline constexpr Tree kT3{Tree::Kind::binomial, 2000.0, 0, 0.124875, 8, 42, 4112897, 1572};

struct Node {
  Sha1Digest state;
  int height;
};

inline Node root(const Tree& t) {
  std::array<std::uint8_t, 20> seed{};  // 16 zero bytes, then the seed
  for (int i = 0; i < 4; ++i)
    seed[16 + i] = std::uint8_t(std::uint32_t(t.root_seed) >> (24 - 8 * i));
  Sha1 h;
  h.update(seed.data(), seed.size());
  return {h.finish(), 0};
}

// Never inlined, so that every system hashes with the same machine code (as matmul.hpp's leaf):
// the hash is nearly all of a node's work.
[[gnu::noinline]] inline Node child(const Node& parent, int index) {
  std::array<std::uint8_t, 4> idx;
  for (int i = 0; i < 4; ++i)
    idx[i] = std::uint8_t(std::uint32_t(index) >> (24 - 8 * i));
  Sha1 h;
  h.update(parent.state.data(), parent.state.size());
  h.update(idx.data(), idx.size());
  return {h.finish(), parent.height + 1};
}

// The node's uniform draw in [0, 1): 31 bits of its state.
inline double uniform(const Node& n) {
  const std::uint32_t r = (std::uint32_t(n.state[16]) << 24 | std::uint32_t(n.state[17]) << 16 |
                           std::uint32_t(n.state[18]) << 8 | std::uint32_t(n.state[19])) &
                          0x7fffffffu;
  return double(r) / 2147483648.0;
}

inline int num_children(const Tree& t, const Node& n) {
  constexpr int kMaxChildren = 100;  // the reference's cap on every node but a binomial root
  if (t.kind == Tree::Kind::binomial) {
    if (n.height == 0) return int(std::floor(t.b0));
    return uniform(n) < t.q ? t.m : 0;
  }
  // Geometric with mean b: P(k children) = p (1 - p)^k, p = 1 / (1 + b), drawn by inverting its
  // distribution function. FIXED shape: the same b at every depth, none at max_depth.
  if (n.height >= t.max_depth) return 0;
  const double p = 1.0 / (1.0 + t.b0);
  const int k = int(std::floor(std::log(1.0 - uniform(n)) / std::log(1.0 - p)));
  return std::min(k, kMaxChildren);
}

// Each child's count in its own slot (no atomics, no sharing but neighbouring slots): inline up to
// 8 children (every T3 node but the root, most T1 nodes), on the heap beyond.
class ChildCounts {
 public:
  explicit ChildCounts(int n) : n_(n) {
    if (n > kInline) heap_ = std::make_unique<std::uint64_t[]>(std::size_t(n));
  }
  std::uint64_t& operator[](int i) { return data()[i]; }
  std::uint64_t sum() { return std::accumulate(data(), data() + n_, std::uint64_t{0}); }

 private:
  static constexpr int kInline = 8;
  std::uint64_t* data() { return heap_ ? heap_.get() : inline_.data(); }
  int n_;
  std::array<std::uint64_t, kInline> inline_{};
  std::unique_ptr<std::uint64_t[]> heap_;
};

inline std::uint64_t count_seq(const Tree& t, const Node& n) {
  const int k = num_children(t, n);
  std::uint64_t total = 1;
  for (int i = 0; i < k; ++i)
    total += count_seq(t, child(n, i));
  return total;
}

// The deepest level (the root is 0), for --self-test's check of the published depth.
inline int depth_seq(const Tree& t, const Node& n) {
  const int k = num_children(t, n);
  int deepest = n.height;
  for (int i = 0; i < k; ++i)
    deepest = std::max(deepest, depth_seq(t, child(n, i)));
  return deepest;
}

// The parent hashes each child's state and hands the task a copy of it, as the reference's
// parallel versions do: a stolen task carries everything it needs.
// Pool: a wslab::ThreadPool, or the floor row's no_scheduler::Pool (no_scheduler.hpp).
template <class Pool>
std::uint64_t count_wslab(Pool& pool, const Tree& t, const Node& n) {
  const int k = num_children(t, n);
  if (k == 0) return 1;
  ChildCounts counts(k);
  classic::TaskGroup<Pool> g(pool);
  for (int i = 0; i < k; ++i) {
    g.run([&pool, &t, &counts, i, c = child(n, i)] { counts[i] = count_wslab(pool, t, c); });
  }
  g.wait();
  return 1 + counts.sum();
}

inline std::uint64_t count_tbb(const Tree& t, const Node& n) {
  const int k = num_children(t, n);
  if (k == 0) return 1;
  ChildCounts counts(k);
  tbb::task_group g;
  for (int i = 0; i < k; ++i) {
    g.run([&t, &counts, i, c = child(n, i)] { counts[i] = count_tbb(t, c); });
  }
  g.wait();
  return 1 + counts.sum();
}

#ifdef WSLAB_CLASSIC_LIBFORK
// Node by value: a coroutine's parameters live in its frame, so a stolen continuation still has it.
inline constexpr auto count_lf = [](auto self, const Tree* t, Node n) -> lf::task<std::uint64_t> {
  const int k = num_children(*t, n);
  if (k == 0) co_return 1;
  ChildCounts counts(k);
  for (int i = 0; i < k; ++i)
    co_await lf::fork(&counts[i], self)(t, child(n, i));
  co_await lf::join;
  co_return 1 + counts.sum();
};
#endif

// One tree as the benchmark runs it (classic_bench.cpp): one entry point per system, and the check.
struct Bench {
  using Result = std::uint64_t;
  const Tree& tree;
  std::uint64_t size() const { return tree.nodes; }
  void reset() {}
  Result seq() const { return count_seq(tree, root(tree)); }
  template <class Pool>
  Result wslab(Pool& pool) const {
    return count_wslab(pool, tree, root(tree));
  }
  Result tbb() const { return count_tbb(tree, root(tree)); }
#ifdef WSLAB_CLASSIC_LIBFORK
  Result libfork(lf::lazy_pool& pool) const {
    return lf::sync_wait(pool, count_lf, &tree, root(tree));
  }
#endif
  bool check(Result r) const { return r == tree.nodes; }
};

}  // namespace classic::uts
