// The scheduler's lab knobs, among them one switch per refinement so that each can be measured by
// turning it off (the ablation variants "stage5_parallel_algos:no_<refinement>" in
// registry/pools.cpp). Every default is the production design.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wslab::sched {

struct SchedulerKnobs {
  enum class OwnerOrder { lifo, fifo };
  enum class Injector { after_local, first, last };
  OwnerOrder owner_order = OwnerOrder::lifo;  // lifo: pop the bottom; fifo: take the top
  Injector injector = Injector::after_local;  // where a worker looks into the global queue
  // Scans of the other queues before a worker parks: 32 with a short pause burst in between,
  // the rest with a yield (Scheduler::search_backoff()). 0 parks at once.
  std::uint32_t spin_rounds = 48;
  std::size_t deque_capacity = 256;  // initial capacity of each worker's deque
  // Spare task nodes (80 bytes each, 96 in glibc's heap) a worker keeps for reuse, at most: 16384
  // covers the harness's (100 x 10,000) grid without touching the allocator, at up to 1.5 MiB per
  // worker retained after such a burst. Beyond it, nodes are freed. A worker keeps as many small
  // group jobs' blocks (56 bytes, 64 in the heap: 1 MiB) in a cache of their own.
  std::size_t task_node_cache = 16384;

  // ---- The refinements (README.md, one step each); false (or 0) switches one off. ----

  // Step 'Node cache': task nodes are recycled per worker, and a worker pays the ledger for the
  // tasks it ran in one RMW when it runs dry. Off: every node is new/delete, every completion
  // is retired at once.
  bool node_cache = true;
  // Step 'Steal gate': owners pop without a fence while nobody steals. Off: every pop fences and
  // thieves open no sessions.
  bool steal_gate = true;
  // Step 'Lingering sessions': a thief's session of the steal gate stays open while it keeps
  // stealing, and is left for the next thief to adopt when it parks. Off: a session closes as
  // soon as its thief finds work, and when it parks.
  bool linger = true;
  // Step 'Guest seat': an outside thread that joins runs the join on the pool's spare seat.
  // Off: the whole join is handed to the pool as one task, and the caller sleeps.
  bool guest_seat = true;
  // Step 'Quick scans': scans a worker out of work makes before it counts itself a searcher.
  std::uint32_t quick_scans = 4;
  // Step 'Node depot': a worker's cache hands its surplus to the pool's depot and refills from
  // it. Off: past task_node_cache, nodes are freed.
  bool node_depot = true;
  // Step 'Batched steals': a thief that steals a task node from a deque holding more takes up
  // to this many in all (about half of what it finds), one steal at a time, and queues the extra
  // ones on its own deque. 1: one task per steal.
  std::uint32_t steal_batch = 16;
  // Step 'Timed leaves': parallel_for and parallel_reduce with the automatic grain cut the range
  // into leaves timed on its first elements. Off: they split on demand, as on any other pool.
  bool timed_leaves = true;
  // Step 'Split deque': join's forks go on a split deque of this many slots per worker, whose
  // owner pushes and pops its private part with plain loads and stores. 0: every fork goes on the
  // Chase-Lev deque, as do forks past a full split deque.
  std::uint32_t split_deque = 8192;
  // Step 'Group jobs': a task group made on a worker queues, from that worker, its
  // callables that fit a task node as group jobs (job.hpp): outside the ledger, run by its waiter
  // with no bookkeeping but a plain count. Off: every callable is a task node.
  bool group_jobs = true;
  // Step 'Tiny steals': a thief whose last few stolen task nodes each ran in under tiny_steal_ns
  // leaves its victim alone for up to tiny_steal_pause_us, as long as the victim keeps working
  // through its deque (its size changed within tiny_steal_still_us) and no other queue holds work.
  // tiny_steal_ns 0: a thief steals whenever it finds work. The timing reads
  // std::chrono::steady_clock twice per stolen task node.
  std::uint32_t tiny_steal_ns = 1000;
  std::uint32_t tiny_steal_pause_us = 1000;
  std::uint32_t tiny_steal_still_us = 50;
  // Step 'Doubling pauses': a pause that ran its whole length, followed by tiny steals from the
  // same victim again, makes the next pause twice as long, up to tiny_steal_pause_us times
  // 2^tiny_steal_doublings. 0: every pause is at most tiny_steal_pause_us.
  std::uint32_t tiny_steal_doublings = 4;
  // Step 'Remembered pauses': the count of pauses that ran their whole length outlives the
  // pause's other ends and the thief's parks; only a stolen job that is not tiny, or another
  // victim, starts the next pause from tiny_steal_pause_us again. Off: every end of a pause but
  // its whole length, and every park, starts again from the knob (Step 'Doubling pauses' alone).
  bool remembered_pauses = true;
  // Step 'Idle gaps': a pausing thief ends its pause for a victim that stands still only while
  // the victim holds work a thief could take. Off: a victim that stands still with nothing queued
  // (between rounds of tiny tasks) ends it too.
  bool pause_through_idle = true;
  // Step 'Tiny forks': a thief times the forks it steals (a co_join's children, a join's b) as it
  // times task nodes and group callables, and a pause counts a victim whose split deque's shared
  // part moves as working. Off: a stolen fork is never timed and the pause watches the other
  // deques only.
  bool time_stolen_forks = true;
  // Step 'Look first': a thief opens its steal session only at a victim whose deques look
  // non-empty (relaxed loads, no fence), so a search that finds nothing leaves every owner
  // popping without fences. Off: every search opens a session before it looks.
  bool look_first = true;
  // Step 'Adaptive wait': an outside thread in wait_idle() whose polls ran out twice in a row
  // sleeps at once, polling one wait in eight to notice when waits become short again
  // (wait_poll.hpp). Off: every wait polls for spin_rounds rounds before it sleeps.
  bool adaptive_wait = true;
  // Step 'Frames in the slot': join and WorkerRef::join build their forked half's job in the
  // split deque's slot where it fits (64 bytes; WorkerRef::join moves the callable in). Off: the
  // job stays in the joining stack and the slot links to it.
  bool frames_in_slots = true;
  // Step 'Growing owners': a thief pausing on an owner's tiny tasks counts the owner as working
  // while a push of the owner's grows its deque (the owner says so: Scheduler::push_own()). Off:
  // a deque that stands still while it grows reads as a blocked owner's, and ends the pause.
  bool growing_owners = true;
  // Step 'Small group jobs': a group job of up to 56 bytes (a callable of up to 32) is built in a
  // 56-byte block, a 64-byte chunk of glibc's heap, cached per worker as task nodes are. Off: the
  // blocks are 80 bytes, a task node's size (96 in the heap).
  bool small_group_jobs = true;
  // Step 'Group frames': with group jobs on, a callable of up to 48 bytes that is trivially
  // copyable and trivially destructible is written into the home worker's frame deque
  // (group_frame.hpp) instead of a block or a node, while that deque holds fewer than
  // group_frames_capacity frames (64 bytes each; the deque grows up to there by doubling, from
  // deque_capacity); past it, such callables are group jobs too. Off: every one is a group job.
  bool group_frames = true;
  std::size_t group_frames_capacity = std::size_t{1} << 20;
  // Step 'Frames given back': a worker asleep for 50 ms (the pool idle) returns its frame deque to
  // deque_capacity frames and frees the buffers it grew out of, once no thief is copying from
  // them, and a guest leaving its seat frees the ones the seat's deque outgrew, so that
  // group_frames_capacity can hold a backlog of a million callables without keeping 128 MiB per
  // worker afterwards. Off: a frame deque keeps every buffer until the pool is destroyed (then set
  // group_frames_capacity back to 65,536, the cap before the step).
  bool give_back_frames = true;
  // Step 'Runs of one frame function': a frame's run function, run by its group's wait on the
  // home, runs the frames of the same function that the wait would pop next, calling their body
  // directly. Off: the wait calls each frame's function through its pointer.
  bool frame_runs = true;
  // Step 'Prepaid admissions': with the node cache on, a worker's spawn that has no debt to
  // cancel (step 'Node cache') admits this many tasks to the ledger in one RMW, and owes the ones
  // not spawned yet until it runs dry; its next spawns use them up with no RMW. 1: such a spawn
  // admits itself alone.
  std::uint32_t admission_batch = 64;
};

}  // namespace wslab::sched
