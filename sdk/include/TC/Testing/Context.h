#pragma once
// Context: what a scenario function receives from the primitive test kit: it spawns participants,
// owns the objects they share, checks results and hands out the run's seeded random numbers.

#include <TC/Strands/Task.h>
#include <TC/Testing/StressOptions.h>
#include <TC/detail/Export.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace TC::Testing
{
namespace detail
{
class RunState;
}

// A blocking participant: a stackful task or a converted thread; waits with SuspendTask or Wait.
using BlockingBody = std::function<void()>;
// A coroutine participant: called once; the coroutine it returns runs on the run's scheduler.
using CoroutineBody = std::function<TC::Strands::Task<void>()>;

// Handed to the scenario function, which creates shared objects (Make), spawns participants and
// registers final checks; participants start after it returns, in an order the seed decides.
//   auto& box = ctx.Make<Mailbox>();
//   ctx.Spawn("taker", [&] { ctx.Check(box.Take() == 1, "the value"); });
/// - Check, Random and Pick are thread-safe, also for participants; the rest: scenario only.
/// - It lives until the run ends: participants may keep a reference.
class TC_API Context
{
public:
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // The run's seed (also in its Result).
    std::uint64_t Seed() const noexcept;
    Mode RunMode() const noexcept;

    // Constructs a T the participants share, destroyed after all finished and AtEnd ran (reverse
    // order); never after a lost wake-up (a stuck waiter still refers to it).
    template <class T, class... Args>
    T& Make(Args&&... args)
    {
        // A member of a final wrapper: destroying a privately-derived ISuspendCallback as a member
        // avoids clang's non-virtual-dtor warning.
        struct Holder final
        {
            T value;
            explicit Holder(Args&&... arguments) : value(std::forward<Args>(arguments)...) {}
        };
        auto holder = std::make_shared<Holder>(std::forward<Args>(args)...);
        T& reference = holder->value;
        Own(std::move(holder));
        return reference;
    }

    // Adds a blocking participant, a Task or Thread as waiterKinds allows and the seed picks;
    // `name` names it in reports. Kept alive until the run ends; an exception escaping it
    // counts as a failed check.
    void Spawn(std::string name, BlockingBody body);
    // Adds a participant given both ways; it may run as a task, a thread or a coroutine.
    void Spawn(std::string name, BlockingBody body, CoroutineBody coroutine);
    // Adds a participant that can only run as a coroutine (whatever waiterKinds says).
    void SpawnCoroutine(std::string name, CoroutineBody coroutine);

    // Runs after every participant finished (not after a hang), on the calling thread, in order.
    void AtEnd(std::function<void()> check);

    // Records a failed check (reported as `what`) unless `condition` holds. Thread-safe; never
    // throws or stops the participant.
    bool Check(bool condition, std::string_view what);

    // A number from the run's seeded sequence (replays if called in the same order, e.g. from
    // the scenario function). Thread-safe.
    std::uint64_t Random() noexcept;
    // A number in [0, n) from the same sequence; n must be nonzero.
    std::size_t Pick(std::size_t n) noexcept;

private:
    friend class detail::RunState;
    explicit Context(detail::RunState& run) noexcept : run_(run) {}
    void Own(std::shared_ptr<void> object);

    detail::RunState& run_;
};
} // namespace TC::Testing
