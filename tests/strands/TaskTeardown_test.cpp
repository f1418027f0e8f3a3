// Freeing a deep Task chain, or a deep nesting through WhenAll/WhenAny: constant native stack
// whatever the depth, every frame freed once, and the deepest frame destroyed completely before
// anything of the frame awaiting it.

#include "StrandsTestSupport.h"

#include <catch2/catch.hpp>

#include <pthread.h>

#include <cstddef>
#include <functional>
#include <vector>

using namespace TC;
using namespace TC::Strands;
using TCTest::FrameSentinel;
using TCTest::ManualExecutor;

namespace
{
// The depth of the chains freed here, and the stack they are freed on: a recursive teardown
// needs several native frames per level, far more than this stack holds at this depth.
constexpr int kDeep = 100000;
constexpr std::size_t kSmallStack = 512 * 1024;

// Runs `work` on a thread of its own whose stack is `bytes` long, and waits for it.
void RunOnStackOf(std::size_t bytes, const std::function<void()>& work)
{
    pthread_attr_t attr;
    REQUIRE(pthread_attr_init(&attr) == 0);
    REQUIRE(pthread_attr_setstacksize(&attr, bytes) == 0);
    pthread_t thread;
    auto run = [](void* arg) -> void*
    {
        (*static_cast<const std::function<void()>*>(arg))();
        return nullptr;
    };
    const int created =
        pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&work));
    pthread_attr_destroy(&attr);
    REQUIRE(created == 0);
    REQUIRE(pthread_join(thread, nullptr) == 0);
}

// Appends its label to the log when it is destroyed: the order frames' locals die in.
struct Recorded
{
    std::vector<int>* log;
    int label;
    Recorded(std::vector<int>* l, int lbl) : log(l), label(lbl) {}
    Recorded(const Recorded&) = delete;
    Recorded& operator=(const Recorded&) = delete;
    ~Recorded() { log->push_back(label); }
};

// One level of a chain that parks on `lot` before it awaits the level below, so a loop running
// `lot` one item at a time starts one level per step: building the chain does not recurse even
// where symmetric transfer is no tail call. The last level stays parked on `lot`.
Task<void> Level(ManualExecutor* lot, int depth, int base, std::vector<int>* log)
{
    FrameSentinel sentinel;
    Recorded recorded(log, base + depth);
    co_await ResumeOn{*lot};
    if (depth == 0)
        co_await ResumeOn{*lot};
    else
        co_await Level(lot, depth - 1, base, log);
}

// Two deep chains joined by WhenAll, beneath a few levels of Task.
Task<void> JoinTwo(ManualExecutor* lot, int depth, std::vector<int>* log)
{
    FrameSentinel sentinel;
    Recorded recorded(log, -1);
    co_await WhenAll(Level(lot, depth, 1000000, log), Level(lot, depth, 2000000, log));
}

Task<void> AboveJoin(ManualExecutor* lot, int above, int depth, std::vector<int>* log)
{
    FrameSentinel sentinel;
    Recorded recorded(log, -2 - above);
    if (above == 0)
        co_await JoinTwo(lot, depth, log);
    else
        co_await AboveJoin(lot, above - 1, depth, log);
}

Task<void> Finished()
{
    co_return;
}

// One level of a nesting that alternates Task and combinator levels: like Level, but it awaits
// the level below through WhenAny (alone) or WhenAll (beside a sibling that has finished by then,
// so each join also holds a finished runner). The last level stays parked on `lot`.
Task<void> NestedLevel(ManualExecutor* lot, int depth, bool any, std::vector<int>* log)
{
    FrameSentinel sentinel;
    Recorded recorded(log, depth);
    co_await ResumeOn{*lot};
    if (depth == 0)
        co_await ResumeOn{*lot};
    else if (any)
        (void)co_await WhenAny(NestedLevel(lot, depth - 1, any, log));
    else
        co_await WhenAll(NestedLevel(lot, depth - 1, any, log), Finished());
}

DetachedTask DetachedLevels(ManualExecutor* lot, int depth, std::vector<int>* log)
{
    FrameSentinel sentinel;
    Recorded recorded(log, -1);
    co_await Level(lot, depth, 0, log);
}

// Runs `lot` one item at a time, `steps` times: one step per level of a Level chain.
void RunSteps(ManualExecutor& lot, int steps)
{
    int ran = 0;
    while (ran < steps && lot.RunOne())
        ++ran;
    REQUIRE(ran == steps);
}

// The labels base, base+1, ..., base+depth in that order: deepest level first.
std::vector<int> Ascending(int base, int depth)
{
    std::vector<int> labels;
    labels.reserve(static_cast<std::size_t>(depth) + 1);
    for (int d = 0; d <= depth; ++d)
        labels.push_back(base + d);
    return labels;
}

// Builds a kDeep-level chain with makeRoot(executor, log) under an owning Task, parks its leaf,
// drops the root on a small stack and checks every level went once, the leaf first.
template <class MakeRoot>
void FreeOwnedChain(MakeRoot makeRoot)
{
    REQUIRE(FrameSentinel::live.load() == 0);
    ManualExecutor lot;
    std::vector<int> log;
    log.reserve(kDeep + 1);
    Task<void> root = makeRoot(&lot, &log);
    root.GetHandle().resume();
    RunSteps(lot, kDeep + 1);
    REQUIRE(lot.Pending() == 1);
    REQUIRE(FrameSentinel::live.load() == kDeep + 1);

    RunOnStackOf(kSmallStack, [&] { root = Task<void>(); });
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(log == Ascending(0, kDeep)); // each level once, the leaf first, the root last
    (void)lot.TakeOne();               // the leaf's park, into a frame that is gone
}

// The same through WhenAny or WhenAll at every level.
void FreeOwnedNesting(bool any)
{
    FreeOwnedChain([any](ManualExecutor* lot, std::vector<int>* log)
                   { return NestedLevel(lot, kDeep, any, log); });
}

// A nesting like FreeOwnedNesting's beneath a DetachedTask: nobody owns it, so each runner is
// the unowned root of its child's chain.
DetachedTask DetachedNesting(ManualExecutor* lot, int depth, bool any, std::vector<int>* log)
{
    FrameSentinel sentinel;
    Recorded recorded(log, -1);
    co_await NestedLevel(lot, depth, any, log);
}

// Builds it, parks its leaf and has the executor drop the park on a small stack: the leaf's
// runner is freed, which leaves the join above it to nobody, whose root is then freed, and so on
// up to the DetachedTask -- every level once, the leaf first.
void AbandonUnownedNesting(bool any)
{
    REQUIRE(FrameSentinel::live.load() == 0);
    ManualExecutor lot;
    std::vector<int> log;
    log.reserve(kDeep + 2);
    DetachedNesting(&lot, kDeep, any, &log);
    RunSteps(lot, kDeep + 1);
    REQUIRE(lot.Pending() == 1);
    REQUIRE(FrameSentinel::live.load() == kDeep + 2);

    RunOnStackOf(kSmallStack, [&] { lot.DropAll(); });
    CHECK(FrameSentinel::live.load() == 0);
    std::vector<int> expected = Ascending(0, kDeep);
    expected.push_back(-1);
    CHECK(log == expected);
}
} // namespace

TEST_CASE("Freeing a deep owned Task chain takes constant stack, deepest frame first",
          "[strands][task]")
{
    FreeOwnedChain([](ManualExecutor* lot, std::vector<int>* log)
                   { return Level(lot, kDeep, 0, log); });
}

TEST_CASE("Freeing a Task chain through WhenAll frees both children's deep chains first",
          "[strands][task]")
{
    REQUIRE(FrameSentinel::live.load() == 0);
    constexpr int kAbove = 3;
    const int depth = kDeep / 2;
    ManualExecutor lot;
    std::vector<int> log;
    log.reserve(static_cast<std::size_t>(kDeep) + 10);
    Task<void> root = AboveJoin(&lot, kAbove, depth, &log);
    root.GetHandle().resume();
    RunSteps(lot, 2 * (depth + 1));
    REQUIRE(lot.Pending() == 2);
    const int frames = (kAbove + 1) + 1 + 2 * (depth + 1);
    REQUIRE(FrameSentinel::live.load() == frames);

    RunOnStackOf(kSmallStack, [&] { root = Task<void>(); });
    CHECK(FrameSentinel::live.load() == 0);
    REQUIRE(log.size() == static_cast<std::size_t>(frames));
    // Each child chain leaf first and in one run, both before the frame that joins them, and
    // that frame before the levels above it, innermost first.
    std::vector<int> first(log.begin(), log.begin() + depth + 1);
    std::vector<int> second(log.begin() + depth + 1, log.begin() + 2 * (depth + 1));
    if (first.front() != 1000000)
        std::swap(first, second);
    CHECK(first == Ascending(1000000, depth));
    CHECK(second == Ascending(2000000, depth));
    const std::vector<int> above(log.begin() + 2 * (depth + 1), log.end());
    CHECK(above == std::vector<int>{-1, -2, -3, -4, -5});
    (void)lot.TakeOne();
    (void)lot.TakeOne();
}

TEST_CASE("An executor abandoning a deep unowned chain frees it in constant stack",
          "[strands][task]")
{
    REQUIRE(FrameSentinel::live.load() == 0);
    ManualExecutor lot;
    std::vector<int> log;
    log.reserve(kDeep + 2);
    DetachedLevels(&lot, kDeep, &log);
    RunSteps(lot, kDeep + 1);
    REQUIRE(lot.Pending() == 1);
    REQUIRE(FrameSentinel::live.load() == kDeep + 2);

    RunOnStackOf(kSmallStack, [&] { lot.DropAll(); }); // abandon: frees from the detached root
    CHECK(FrameSentinel::live.load() == 0);
    std::vector<int> expected = Ascending(0, kDeep);
    expected.push_back(-1);
    CHECK(log == expected);
}

TEST_CASE("A Task released from its owner and destroyed by hand frees its chain beneath",
          "[strands][task]")
{
    REQUIRE(FrameSentinel::live.load() == 0);
    ManualExecutor lot;
    std::vector<int> log;
    Task<void> root = Level(&lot, 5, 0, &log);
    root.GetHandle().resume();
    RunSteps(lot, 6);
    REQUIRE(FrameSentinel::live.load() == 6);
    root.Release().destroy();
    CHECK(FrameSentinel::live.load() == 0);
    CHECK(log == Ascending(0, 5));
    (void)lot.TakeOne();
}

TEST_CASE("Freeing a deep nesting through WhenAll from its owner takes constant stack",
          "[strands][whenall]")
{
    FreeOwnedNesting(false);
}

TEST_CASE("Freeing a deep nesting through WhenAny from its owner takes constant stack",
          "[strands][whenany]")
{
    FreeOwnedNesting(true);
}

TEST_CASE("Abandoning a deep unowned nesting through WhenAll frees it in constant stack",
          "[strands][whenall]")
{
    AbandonUnownedNesting(false);
}

TEST_CASE("Abandoning a deep unowned nesting through WhenAny frees it in constant stack",
          "[strands][whenany]")
{
    AbandonUnownedNesting(true);
}
