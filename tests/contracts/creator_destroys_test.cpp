// Contract: the creator of a multi-waiter primitive destroys it right after its own wait returns,
// with 16 other waiters of every kind released by the same opening (CreatorRounds.h). Each
// header's sentence is quoted above its test; tests/contracts/README.md maps them.

#include "CreatorRounds.h"

#include <TC/Synchronization.h>

using namespace TC::Contracts;
using namespace TC::Synchronization;

namespace
{
// Full size: 2000 rounds of 17 waiters each.
constexpr int kRounds = 2000;

struct AutoResetSubject
{
    using Object = AutoResetEvent;
    static Object* Make() { return new AutoResetEvent; }
    static void Wait(Object& event) { event.Wait(); }
    static auto Async(Object& event) { return event.WaitAsync(); }
    static void Open(Object& event, int waiters)
    {
        for (int i = 0; i < waiters; ++i)
            event.Set(); // the last Set resumes the creator; nothing here touches it after
    }
};

struct ManualResetSubject
{
    using Object = ManualResetEvent;
    static Object* Make() { return new ManualResetEvent; }
    static void Wait(Object& event) { event.Wait(); }
    static auto Async(Object& event) { return event.WaitAsync(); }
    static void Open(Object& event, int) { event.Set(); }
};

struct LatchSubject
{
    using Object = Latch;
    static Object* Make() { return new Latch(1); }
    static void Wait(Object& latch) { latch.Wait(); }
    static auto Async(Object& latch) { return latch.WaitAsync(); }
    static void Open(Object& latch, int) { latch.CountDown(); }
};

struct WaitGroupSubject
{
    using Object = WaitGroup;
    static Object* Make() { return new WaitGroup(1); }
    static void Wait(Object& group) { group.Wait(); }
    static auto Async(Object& group) { return group.WaitAsync(); }
    static void Open(Object& group, int) { group.Done(); }
};
} // namespace

// AutoResetEvent.h: "Its creator ..., resumed last, may destroy it as soon as its own Wait
// returned, provided every other waiter was suspended on it ... before the Set that let the
// creator pass, and no other Set can still be running."
TEST_CASE("AutoResetEvent: the creator destroys it right after its Wait, 16 waiters resumed first",
          "[contract][autoreset]")
{
    CreatorRounds<AutoResetSubject> rounds(Opening::AllSuspended);
    rounds.Run(Rounds(kRounds));
}

// ManualResetEvent.h: "Destruction: by any waiter as soon as its Wait returned, if no other Set
// is running and nobody else is about to wait."
TEST_CASE("ManualResetEvent: the creator destroys it right after its Wait, suspended or not",
          "[contract][manualreset]")
{
    SECTION("every waiter suspended")
    {
        CreatorRounds<ManualResetSubject> rounds(Opening::AllSuspended);
        rounds.Run(Rounds(kRounds) / 2);
    }
    SECTION("the creator racing the Set")
    {
        CreatorRounds<ManualResetSubject> rounds(Opening::CreatorRacing);
        rounds.Run(Rounds(kRounds) / 2);
    }
}

// Latch.h: "Destruction: by any waiter as soon as its Wait returned, provided nobody counts it
// down or starts a wait any more."
TEST_CASE("Latch: the creator destroys it right after its Wait, suspended or not",
          "[contract][latch]")
{
    SECTION("every waiter suspended")
    {
        CreatorRounds<LatchSubject> rounds(Opening::AllSuspended);
        rounds.Run(Rounds(kRounds) / 2);
    }
    SECTION("the creator racing the CountDown")
    {
        CreatorRounds<LatchSubject> rounds(Opening::CreatorRacing);
        rounds.Run(Rounds(kRounds) / 2);
    }
}

// WaitGroup.h: "Destruction: by its creator ... as soon as its Wait returned, provided nobody
// adds to it or starts a wait any more and every other waiter was suspended on it, or had
// returned, before the count reached zero."
TEST_CASE("WaitGroup: the creator destroys it right after its Wait, suspended or not",
          "[contract][waitgroup]")
{
    SECTION("every waiter suspended")
    {
        CreatorRounds<WaitGroupSubject> rounds(Opening::AllSuspended);
        rounds.Run(Rounds(kRounds) / 2);
    }
    SECTION("the creator racing the Done")
    {
        CreatorRounds<WaitGroupSubject> rounds(Opening::CreatorRacing);
        rounds.Run(Rounds(kRounds) / 2);
    }
}
