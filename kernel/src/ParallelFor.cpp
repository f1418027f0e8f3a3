// ParallelFor's engine: the participants' parts of the range, taken from the front by their
// owner and halved from the back by the others, and the caller's wait for the last index.

#include "SplitParts.h"

#include <TC/ParallelFor.h>
#include <TC/Suspend.h>
#include <TC/detail/SpinLock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>

namespace TC::detail
{
namespace
{
// The most indices one round covers (offsets fit the halves of a SplitPart's word); a longer range
// runs as several rounds.
constexpr std::size_t kMaxRound = 0xffff'ffffu;
// At most this many helpers, whatever the worker count.
constexpr unsigned kMaxHelpers = 63;
// The waiter word once the last index has run.
constexpr std::uintptr_t kRoundDone = 1;

// One round's state, shared by the caller and its helpers: freed by the last of them to let go,
// so a helper that starts after the round ended finds it empty and leaves.
struct Round
{
    ChunkCall call;
    void* body;
    std::size_t base;
    std::size_t total;
    std::size_t grain;
    unsigned participants;
    std::unique_ptr<SplitPart[]> parts;
    std::atomic<unsigned> nextPart{1}; // part 0 is the caller's; helpers claim the others
    std::atomic<unsigned> holders;
    std::atomic<bool> failed{false};
    std::exception_ptr error; // the first chunk's that threw; read once `done` reached `total`
    alignas(64) std::atomic<std::size_t> done{0};
    std::atomic<std::uintptr_t> waiter{0}; // 0, kRoundDone, or the waiting caller's entry

    void Release() noexcept
    {
        if (holders.fetch_sub(1, std::memory_order_acq_rel) == 1)
            delete this;
    }

    // A chunk of `part`'s front, at most `grain` indices; false when the part is empty.
    bool TakeFront(SplitPart& part, IndexRange& chunk) const noexcept
    {
        std::uint64_t word = part.word.load(std::memory_order_acquire);
        for (;;)
        {
            const std::uint64_t begin = BeginOf(word);
            const std::uint64_t end = EndOf(word);
            if (begin >= end)
                return false;
            const std::uint64_t next = std::min<std::uint64_t>(begin + grain, end);
            if (part.word.compare_exchange_weak(word, Pack(next, end), std::memory_order_acq_rel,
                                                std::memory_order_acquire))
            {
                chunk = {base + begin, base + next};
                return true;
            }
        }
    }

    void RunChunk(IndexRange chunk) noexcept
    {
        if (failed.load(std::memory_order_relaxed))
            return; // skipped: an earlier chunk threw
        try
        {
            call(body, chunk);
        }
        catch (...)
        {
            if (!failed.exchange(true, std::memory_order_acq_rel))
                error = std::current_exception();
        }
    }

    // Counts `count` indices run; the one that counts the last resumes the waiting caller.
    void CountDone(std::size_t count) noexcept
    {
        if (count == 0 || done.fetch_add(count, std::memory_order_acq_rel) + count != total)
            return;
        const std::uintptr_t previous = waiter.exchange(kRoundDone, std::memory_order_acq_rel);
        if (previous != 0)
            ResumeTask(SuspendedTask(reinterpret_cast<SuspendedTaskEntry*>(previous)));
    }

    // Runs chunks of its own part, then of parts taken from others, until none is left.
    void Participate(unsigned self) noexcept
    {
        do
        {
            std::size_t ran = 0;
            IndexRange chunk;
            while (TakeFront(parts[self], chunk))
            {
                RunChunk(chunk);
                ran += chunk.end - chunk.begin;
            }
            CountDone(ran);
        } while (StealHalf(parts.get(), participants, self));
    }
};

// The caller's wait for the round's last index.
struct AwaitRound final : ISuspendCallback
{
    Round* round;
    explicit AwaitRound(Round* r) : round(r) {}
    void OnSuspended(SuspendedTask waiter) noexcept override
    {
        std::uintptr_t expected = 0;
        if (!round->waiter.compare_exchange_strong(expected,
                                                   reinterpret_cast<std::uintptr_t>(waiter.Entry()),
                                                   std::memory_order_acq_rel, std::memory_order_acquire))
            ResumeTask(waiter); // the last index ran meanwhile
    }
};

// Before the caller suspends: what is left are chunks that others run, a grain each at most,
// and a suspended caller's wake-up costs more than a short chunk. So it spins while that holds
// nothing up (asked again every 32 pauses, as work may arrive), for about 20 us at most; true
// when the round ended meanwhile.
bool SpinForRound(const Round& round) noexcept
{
    using Clock = std::chrono::steady_clock;
    Clock::time_point until{};
    for (unsigned i = 1;; ++i)
    {
        if (round.waiter.load(std::memory_order_acquire) == kRoundDone)
            return true;
        if (i % 32 == 0)
        {
            if (!SpinBeforeWaitHoldsNothingUp())
                return false;
            const Clock::time_point now = Clock::now();
            if (until == Clock::time_point{})
                until = now + std::chrono::microseconds(20);
            else if (now >= until)
                return false;
        }
        CpuRelax();
    }
}

// How many helpers a round of `total` indices gets on `scheduler`.
unsigned HelperCount(Scheduler& scheduler, std::size_t total, std::size_t grain) noexcept
{
    std::size_t helpers = scheduler.WorkerCount();
    if (helpers != 0 && Scheduler::Current() == &scheduler)
        --helpers; // the caller occupies one of its workers
    const std::size_t chunks = grain == 0 ? total : (total + grain - 1) / grain;
    helpers = std::min<std::size_t>({helpers, chunks - 1, kMaxHelpers});
    return static_cast<unsigned>(helpers);
}

void RunRound(Scheduler& scheduler, std::size_t base, std::size_t total, std::size_t grain,
              ChunkCall call, void* body, const TaskOptions& helperOptions)
{
    const unsigned helpers = HelperCount(scheduler, total, grain);
    const unsigned participants = helpers + 1;
    auto* round = new Round{};
    round->call = call;
    round->body = body;
    round->base = base;
    round->total = total;
    round->grain = grain != 0 ? grain : std::max<std::size_t>(1, total / participants / 8);
    round->participants = participants;
    round->holders.store(participants, std::memory_order_relaxed);
    try
    {
        round->parts.reset(new SplitPart[participants]);
    }
    catch (...)
    {
        delete round;
        throw;
    }
    for (unsigned i = 0; i < participants; ++i)
        round->parts[i].word.store(Pack(total * i / participants, total * (i + 1) / participants),
                                   std::memory_order_relaxed);
    if (helpers != 0)
    {
        try
        {
            // Published by the start: the helpers read the round after it.
            scheduler.StartBulkDetached(helpers,
                                        [round](std::size_t)
                                        {
                                            round->Participate(round->nextPart.fetch_add(
                                                1, std::memory_order_relaxed));
                                            round->Release();
                                        },
                                        helperOptions);
        }
        catch (...)
        {
            delete round; // no helper started
            throw;
        }
    }
    round->Participate(0);
    if (!SpinForRound(*round))
    {
        AwaitRound await(round);
        SuspendTask(&await);
    }
    std::exception_ptr error = round->failed.load(std::memory_order_acquire) ? round->error : nullptr;
    round->Release();
    if (error)
        std::rethrow_exception(error);
}
} // namespace

void RunParallelFor(Scheduler& scheduler, IndexRange range, std::size_t grain, ChunkCall call,
                    void* body, const TaskOptions& helperOptions)
{
    for (std::size_t base = range.begin; base < range.end;)
    {
        const std::size_t total = std::min(range.end - base, kMaxRound);
        RunRound(scheduler, base, total, grain, call, body, helperOptions);
        base += total;
    }
}
} // namespace TC::detail
