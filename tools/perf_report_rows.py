"""The rows tools/perf-report knows: implementation names, peers built from source, aliases, the
workloads it expects, the machine's floor rows and the layers' speed targets."""

import re

# Implementation suffixes/prefixes and how the report names them.
IMPLS = {
    "TC": "ConcurrentTasks",
    "BoostFiber": "Boost.Fiber",
    "BoostContext": "Boost.Context",
    "Asio": "asio",
    "TBB": "oneTBB",
    "Std": "std",
    "StdMutex": "std",
    "Moodycamel": "moodycamel",
    "TMC": "TooManyCooks",
    "Marl": "marl",
}
IMPL_ORDER = ["TC", "TMC", "Marl", "BoostContext", "BoostFiber", "Asio", "TBB", "Std", "Moodycamel"]
# Normalised spellings (lower case, letters and digits only) of each implementation, for names
# that carry it as an argument or a BENCHMARK_CAPTURE label.
IMPL_SPELLINGS = {
    "tc": "TC", "concurrenttasks": "TC", "ours": "TC",
    "boostfiber": "BoostFiber", "fiber": "BoostFiber",
    "boostcontext": "BoostContext",
    "asio": "Asio",
    "tbb": "TBB", "onetbb": "TBB",
    "std": "Std", "stdmutex": "Std", "stdthread": "Std",
    "moodycamel": "Moodycamel", "blockingconcurrentqueue": "Moodycamel",
    "moodycamelblocking": "Moodycamel",
    "tmc": "TMC", "toomanycooks": "TMC",
    "marl": "Marl",
}
# Peers built from source archives (--peer-src): the archive each unpacks from (by name prefix),
# the folder it unpacks to, and the rows its peer file measures -- where the source was not at
# hand, those rows' cells say "not measured".
SOURCE_PEERS = {
    "TMC": ("toomanycooks-", "tmc",
            ["BurstSpawn/200000", "EventPingPongMulti", "PingPongCrossThread",
             "SkynetNatural/100000", "SkynetNaturalCoroutine/100000", "CoroutineSpawnJoin/1000",
             "MutexContended", "ChannelThroughput/0"]),
    "Marl": ("marl-", "marl",
             ["BurstSpawn/200000", "EventPingPongMulti", "PingPongCrossThread",
              "SkynetNatural/100000"]),
}
# Names that follow no convention: name -> (workload, impl, arguments the row pairs under).
ALIASES = {
    "BoostContextSwitch": ("ContextSwitch", "BoostContext", None),
    "AsioStrandPost": ("StrandPost", "Asio", None),
    # moodycamel's queue is unbounded: it pairs with the unbounded Channel (capacity 0).
    "MoodycamelBlockingQueueThroughput": ("ChannelThroughput", "Moodycamel", ["0"]),
}
# Arguments Google Benchmark appends that say how a row was run, not what it measures.
META_ARG = re.compile(r"^(real_time|manual_time|process_time|iterations:\d+|repeats:\d+|"
                      r"min_time:[\d.]+s?|min_warmup_time:[\d.]+s?|threads:\d+)$")
# The workloads the peer comparison covers; the report names those with no ConcurrentTasks figure.
EXPECTED = ["ContextSwitch", "TaskSwitch", "Yield", "PingPongSameThread", "PingPongCrossThread",
            "SpawnJoinOneWorker", "BurstSpawn/200000", "BurstSpawnJoinHandles/200000",
            "EventPingPongMulti", "SkynetDepthFirst", "SkynetNatural/100000",
            "SkynetNaturalCoroutine/100000", "MutexContended", "ChannelThroughput", "StrandPost/1", "StrandPost/64",
            "TimedWaitResumedEarly", "UntimedWait", "TaskMemory", "CoroutineMemory",
            "CoroutineSpawnJoin/1000", "HostStartEach/2000", "HostStartBulk/2000",
            "BurstSpawnBulk/200000", "ParallelFor", "FrameGraph"]
# The rows the clang-19 build runs, and the names they are reported under.
CLANG19_FILTER = "^BM_(BoostContextSwitch|ContextSwitch|TaskSwitch)(/|$)"
CLANG19_NAMES = {"BM_ContextSwitch": "BM_ContextSwitchClang19",
                 "BM_BoostContextSwitch": "BM_ContextSwitchClang19_BoostContext",
                 "BM_TaskSwitch": "BM_TaskSwitchClang19"}
TIME_TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# The machine's floors (tests/bench/HardwareBench.cpp): measured beside the library's rows and
# printed apart from them, since no library code runs in them.
FLOOR_ROWS = {"HardwareLockedExchange": "one uncontended locked read-modify-write",
              "HardwareLineTransfer": "one cache line moved from one core to the other"}
# Primitives users write on WaitQueue (the guide's samples), against the peers they would use.
EXPECTED += ["WaitQueueHandOff", "BoundedQueueThroughput/1024"]
# The library's Mutex, Semaphore and ConditionVariable beside the same primitive written on
# WaitQueue (tests/bench/WaitQueueForms.h), in the same run: whether re-expressing them would pay.
WAITQUEUE_FORMS = [("MutexContended", "MutexContendedOnWaitQueue"),
                   ("SemaphorePingPong/2", "SemaphorePingPongOnWaitQueue/2"),
                   ("ConditionVariablePingPong/2", "ConditionVariablePingPongOnWaitQueue/2")]
EXPECTED += [form for pair in WAITQUEUE_FORMS for form in pair if form not in EXPECTED]
# The layers' speed targets, checked against this run's medians. A target is met when every
# bound holds: ("below", row, ns), ("within", row, peer, factor): ours <= factor x the peer's,
# ("ahead", row, peer, factor): the peer's >= factor x ours, ("ratio", row, other, factor): ours
# <= factor x our `other` row. `floor`, where one applies: the least any implementation can take
# on this machine, as ([(count, row), ...], what the counts are): a sum of counts of a floor row,
# or of one of our own rows (the context switch), all from this run.
TARGETS = [
    {"layer": "kernel", "what": "context switch within 1.2x of Boost.Context's fiber",
     "bounds": [("within", "ContextSwitch", "BoostContext", 1.2)]},
    {"layer": "kernel", "what": "clang-19's preserve_none switch at most 0.6x Boost.Context's",
     "bounds": [("within", "ContextSwitchClang19", "BoostContext", 0.6)]},
    {"layer": "kernel", "what": "same-thread ping-pong round trip under 40 ns",
     "bounds": [("below", "PingPongSameThread", 40)],
     "floor": ([(10, "HardwareLockedExchange")], "the guide Mailbox's ten locked RMWs per round trip")},
    # The same round trip through the hand-off DESIGN.md's cost model counts for it: a one-word
    # single-waiter event (the target names "single-waiter handoffs"), shown beside the guide's.
    {"layer": "kernel", "what": "same-thread ping-pong under 40 ns: one-word single-waiter event",
     "bounds": [("below", "EventPingPong<AutoResetEvent_s>/1", 40)],
     "floor": ([(4, "HardwareLockedExchange"), (2, "ContextSwitch")],
               "each Set's claim, each waiter's publish, and the two switches")},
    {"layer": "kernel", "what": "spawn and complete under 40 ns per task",
     "bounds": [("below", "SpawnJoinOneWorker", 40)],
     "floor": ([(1, "HardwareLockedExchange")], "the join word's exchange")},
    {"layer": "kernel", "what": "cross-thread round trip under 1 us",
     "bounds": [("below", "PingPongCrossThread", 1000)],
     # Each hand-off crosses twice: the resumed task's place in its scheduler's queue (the
     # submitter writes it, the other worker's poll reads it) and the mailbox's word (the taker
     # reads the value the putter wrote). guides/performance.md has the traced breakdown.
     "floor": ([(4, "HardwareLineTransfer")],
               "two crossings per hand-off: the scheduler queue's slot and the mailbox's word")},
    {"layer": "kernel", "what": "timed wait resumed early within 2x of an untimed one",
     "bounds": [("ratio", "TimedWaitResumedEarly", "UntimedWait", 2.0)]},
    {"layer": "kernel", "what": "a bulk start of 2000 jobs from the host at most a third of 2000 Starts",
     "bounds": [("ratio", "HostStartBulk/2000", "HostStartEach/2000", 1 / 3)]},
    {"layer": "kernel", "what": "ParallelFor over 100 000 floats ahead of oneTBB's parallel_for",
     "bounds": [("ahead", "ParallelFor", "TBB", 1.0)]},
    {"layer": "kernel", "what": "FrameGraph (2000 jobs on three levels) ahead of oneTBB's flow graph",
     "bounds": [("ahead", "FrameGraph", "TBB", 1.0)]},
    {"layer": "sync", "what": "uncontended Set+Wait under 10 ns: AutoResetEvent",
     "bounds": [("below", "EventSetWait<AutoResetEvent>", 10)],
     "floor": ([(2, "HardwareLockedExchange")], "Set's publish and Wait's consume")},
    {"layer": "sync", "what": "uncontended Set+Wait under 10 ns: AutoResetEvent_s",
     "bounds": [("below", "EventSetWait<AutoResetEvent_s>", 10)],
     "floor": ([(1, "HardwareLockedExchange")], "Set's count (the waiter's pass is a load and a store)")},
    {"layer": "sync", "what": "uncontended Set+Wait under 10 ns: ManualResetEvent",
     "bounds": [("below", "EventSetWait<ManualResetEvent>", 10)],
     "floor": ([(1, "HardwareLockedExchange")], "Set's publish")},
    {"layer": "sync", "what": "uncontended Set+Wait under 10 ns: ManualResetEvent_s",
     "bounds": [("below", "EventSetWait<ManualResetEvent_s>", 10)],
     "floor": ([(1, "HardwareLockedExchange")], "Set's publish")},
    {"layer": "sync", "what": "contended Mutex at least 3x Boost.Fiber's",
     "bounds": [("ahead", "MutexContended", "BoostFiber", 3.0)]},
    {"layer": "sync", "what": "Channel throughput within 1.5x of moodycamel",
     "bounds": [("within", "ChannelThroughput/0", "Moodycamel", 1.5)]},
    # Primitives users write on WaitQueue (the guide's samples), in the shapes they use them.
    {"layer": "sync", "what": "WaitQueue hand-off round trip: ahead of Boost.Fiber, within 1.5x of moodycamel",
     "bounds": [("ahead", "WaitQueueHandOff", "BoostFiber", 1.0),
                ("within", "WaitQueueHandOff", "Moodycamel", 1.5)]},
    {"layer": "sync", "what": "bounded queue throughput: ahead of Boost.Fiber, within 1.5x of moodycamel",
     "bounds": [("ahead", "BoundedQueueThroughput/1024", "BoostFiber", 1.0),
                ("within", "BoundedQueueThroughput/1024", "Moodycamel", 1.5)]},
    {"layer": "sync", "what": "Mutex, Semaphore, ConditionVariable no slower than their WaitQueue forms",
     "bounds": [("ratio", library, form, 1.0) for library, form in WAITQUEUE_FORMS]},
    {"layer": "strands", "what": "strand post under 60 ns and 6x asio: 1 strand",
     "bounds": [("below", "StrandPost/1", 60), ("ahead", "StrandPost/1", "Asio", 6.0)]},
    {"layer": "strands", "what": "strand post under 60 ns and 6x asio: 64 strands",
     "bounds": [("below", "StrandPost/64", 60), ("ahead", "StrandPost/64", "Asio", 6.0)]},
    {"layer": "strands", "what": "coroutine spawn-and-join under 40 ns",
     "bounds": [("below", "CoroutineSpawnJoin/1000", 40)]},
]
