// Contract: a waiter of a Multiple object that is not its creator never touches the object once
// it was resumed, so the creator, resumed last, may destroy it at once. Here the object lives on
// a page of its own, and the creator makes that page inaccessible right after destroying it;
// the other waiters are resumed before the creator but run only after that (their scheduler's one
// worker is held until then), so any read of theirs faults, in every build.

#include "CreatorRounds.h"

#include <TC/Synchronization.h>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <new>
#include <thread>

using namespace TC::Contracts;
using namespace TC::Synchronization;

namespace
{
// One page, readable until Seal().
class Page
{
public:
    Page()
        : size_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))),
          base_(mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
    {
        REQUIRE(base_ != MAP_FAILED);
    }
    ~Page() { munmap(base_, size_); }
    Page(const Page&) = delete;
    Page& operator=(const Page&) = delete;

    void* Base() const noexcept { return base_; }
    void Seal() noexcept { mprotect(base_, size_, PROT_NONE); } // any later access faults

private:
    std::size_t size_;
    void* base_;
};

class Gate : public Waitable<SuspensionKind::Multiple, Gate>
{
public:
    void Open() noexcept
    {
        const auto busy = ResumerScope();
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
    static Object* Make(void* at) { return new (at) Gate; }
    static void Wait(Object& gate) { gate.Wait(); }
    static auto Async(Object& gate) { return gate.WaitAsync(); }
    static void Open(Object& gate, int) { gate.Open(); }
};

struct AutoResetSubject
{
    using Object = AutoResetEvent;
    static Object* Make(void* at) { return new (at) AutoResetEvent; }
    static void Wait(Object& event) { event.Wait(); }
    static auto Async(Object& event) { return event.WaitAsync(); }
    static void Open(Object& event, int waiters)
    {
        for (int i = 0; i < waiters; ++i)
            event.Set();
    }
};

struct WaitGroupSubject
{
    using Object = WaitGroup;
    static Object* Make(void* at) { return new (at) WaitGroup(1); }
    static void Wait(Object& group) { group.Wait(); }
    static auto Async(Object& group) { return group.WaitAsync(); }
    static void Open(Object& group, int) { group.Done(); }
};

template <class Subject>
Fire AwaitLate(TC::Scheduler& late, typename Subject::Object* object, std::atomic<bool>& passed)
{
    co_await late.Schedule();
    co_await Subject::Async(*object);
    passed.store(true);
}

// The creator is a task of its own scheduler; a task and a coroutine wait on `late`, whose one
// worker is held from before the opening until the page is sealed; a converted thread waits too
// (it runs at once when resumed, so it faults only if it reads after the seal).
template <class Subject>
void CheckEarlyWaitersLeaveTheObjectAlone()
{
    using Object = typename Subject::Object;
    static_assert(sizeof(Object) <= 4096);
    TC::SetRacePointHook(&CountPublication);
    publications.store(0);
    Page page;
    std::atomic<Object*> made{nullptr};
    std::atomic<bool> sealed{false};
    std::atomic<bool> holding{false};
    std::atomic<bool> taskPassed{false};
    std::atomic<bool> coroutinePassed{false};
    std::atomic<bool> threadPassed{false};
    {
        TC::Scheduler late(1u);
        TC::Scheduler creators(1u);
        auto creator = creators.Start(
            [&]
            {
                Object* object = Subject::Make(page.Base());
                made.store(object);
                Subject::Wait(*object);
                object->~Object();
                page.Seal();
                sealed.store(true);
            });
        Await([&] { return made.load() != nullptr; });
        Object* const object = made.load();
        auto task = late.Start(
            [&, object]
            {
                Subject::Wait(*object);
                taskPassed.store(true);
            });
        AwaitLate<Subject>(late, object, coroutinePassed);
        std::thread thread(
            [&, object]
            {
                Subject::Wait(*object);
                threadPassed.store(true);
            });
        Await([&] { return publications.load() == 4; }); // the creator and the three others
        auto holder = late.Start(
            [&]
            {
                holding.store(true);
                while (!sealed.load())
                    std::this_thread::yield();
            });
        Await([&] { return holding.load(); });
        Subject::Open(*object, 4); // resumes the three others first, the creator last
        creator.Join();
        holder.Join();
        task.Join();
        thread.join();
        Await([&] { return coroutinePassed.load(); });
    }
    TC::SetRacePointHook(nullptr);
    CHECK(sealed.load());
    CHECK(taskPassed.load());
    CHECK(threadPassed.load());
}
} // namespace

// SuspendableBase.h (Multiple): "A waiter that is not the creator (a task, converted thread or
// coroutine) never touches the object once a resumer has handed it to ResumeTask."
TEST_CASE("Waiters resumed before the creator never read the object again", "[contract][early]")
{
    SECTION("a guide-style Waitable<Multiple> gate")
    {
        CheckEarlyWaitersLeaveTheObjectAlone<GateSubject>();
    }
    SECTION("AutoResetEvent")
    {
        CheckEarlyWaitersLeaveTheObjectAlone<AutoResetSubject>();
    }
    SECTION("WaitGroup")
    {
        CheckEarlyWaitersLeaveTheObjectAlone<WaitGroupSubject>();
    }
}
