// Contract: a Waitable<Multiple> written from the custom-primitives guide -- a gate -- keeps the
// lifetime rule of SuspendableBase<Multiple>: its creator destroys it right after its own wait,
// with 16 other waiters of every kind released by the same opening (CreatorRounds.h), also with
// two openings in flight at once.

#include "CreatorRounds.h"

#include <TC/Synchronization.h>

#include <atomic>
#include <thread>

using namespace TC::Contracts;
using namespace TC::Synchronization;

namespace
{
constexpr int kRounds = 2000;

// Written as a user would from the guide: TryWait reads the state, Resume resumes everyone, and
// the opening holds ResumerScope() around its state change and its Resume, because the creator
// can see the gate open before that Resume begins.
class Gate : public Waitable<SuspensionKind::Multiple, Gate>
{
public:
    void Open() noexcept
    {
        const auto busy = ResumerScope();
        open_.store(true);
        Resume();
    }

    // As Open, for a second opener: `entered` is set once its scope is held, and it changes the
    // state only once `go` is set, so that both openings are inside the gate at once.
    void OpenAlongside(std::atomic<bool>& entered, const std::atomic<bool>& go) noexcept
    {
        const auto busy = ResumerScope();
        entered.store(true);
        while (!go.load())
            std::this_thread::yield();
        open_.store(true);
        Resume();
    }

    // As Open, for the first opener: its scope is held before it lets the second opening change
    // the state (`go`), since the creator may pass and destroy the gate once either has.
    void OpenReleasing(std::atomic<bool>& go) noexcept
    {
        const auto busy = ResumerScope();
        go.store(true);
        open_.store(true);
        Resume();
    }

    bool TryWait() noexcept { return open_.load(); }
    void Resume() noexcept { SuspendableBase<SuspensionKind::Multiple>::Resume(); }

private:
    std::atomic<bool> open_{false};
};

struct GateSubject
{
    using Object = Gate;
    static Object* Make() { return new Gate; }
    static void Wait(Object& gate) { gate.Wait(); }
    static auto Async(Object& gate) { return gate.WaitAsync(); }
    static void Open(Object& gate, int) { gate.Open(); }
};

// A thread that opens the round's gate alongside the main thread's opening.
class SecondOpener
{
public:
    SecondOpener()
        : thread_(
              [this]
              {
                  for (std::uint64_t seen = 0;;)
                  {
                      round_.wait(seen);
                      seen = round_.load();
                      if (stop_.load())
                          return;
                      gate_.load()->OpenAlongside(entered_, go_);
                  }
              })
    {
    }
    ~SecondOpener()
    {
        stop_.store(true);
        round_.fetch_add(1);
        round_.notify_all();
        thread_.join();
    }
    SecondOpener(const SecondOpener&) = delete;
    SecondOpener& operator=(const SecondOpener&) = delete;

    // Both openings run at once; either may resume the creator.
    void OpenWith(Gate& gate)
    {
        entered_.store(false);
        go_.store(false);
        gate_.store(&gate);
        round_.fetch_add(1);
        round_.notify_all();
        while (!entered_.load())
            std::this_thread::yield();
        gate.OpenReleasing(go_); // the gate may be gone once this returns
    }

private:
    std::atomic<Gate*> gate_{nullptr};
    std::atomic<bool> entered_{false};
    std::atomic<bool> go_{false};
    std::atomic<std::uint64_t> round_{0};
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

SecondOpener* secondOpener = nullptr;

struct TwoOpenersSubject : GateSubject
{
    static void Open(Object& gate, int) { secondOpener->OpenWith(gate); }
};
} // namespace

// SuspendableBase.h (Multiple): "the creator may destroy the object as soon as its own wait
// returns" -- whether it suspended or found the gate open.
TEST_CASE("A guide-style Waitable<Multiple> gate: the creator destroys it right after its Wait",
          "[contract][gate]")
{
    SECTION("every waiter suspended")
    {
        CreatorRounds<GateSubject> rounds(Opening::AllSuspended);
        rounds.Run(Rounds(kRounds) / 2);
    }
    SECTION("the creator racing the opening")
    {
        CreatorRounds<GateSubject> rounds(Opening::CreatorRacing);
        rounds.Run(Rounds(kRounds) / 2);
    }
}

// SuspendableBase.h (Multiple): the creator's wait "returns only after every call that entered
// the object before the creator passed has left it: each Resume ..." -- two openings in flight,
// one resumes the creator, which deletes the gate while the other may still be inside.
TEST_CASE("A guide-style gate: the creator destroys it while a second opening is still inside",
          "[contract][gate]")
{
    SecondOpener opener;
    secondOpener = &opener;
    SECTION("every waiter suspended")
    {
        CreatorRounds<TwoOpenersSubject> rounds(Opening::AllSuspended);
        rounds.Run(Rounds(kRounds) / 2);
    }
    SECTION("the creator racing the openings")
    {
        CreatorRounds<TwoOpenersSubject> rounds(Opening::CreatorRacing);
        rounds.Run(Rounds(kRounds) / 2);
    }
    secondOpener = nullptr;
}
