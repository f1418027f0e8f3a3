#pragma once
// Context: what a scenario function receives from the primitive test kit -- it spawns the
// participants that drive the primitive under test, owns the objects they share, checks results,
// and hands out the run's seeded random numbers.

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

// A blocking participant: runs as a stackful task or a converted thread, and may wait with
// SuspendTask (or any primitive's Wait/Take).
using BlockingBody = std::function<void()>;
// A coroutine participant: the callable is called once and the coroutine it returns is awaited
// on the run's scheduler; it waits with co_await.
using CoroutineBody = std::function<TC::Task<void>()>;

// Handed to the scenario function by RunScenario and Stress. The scenario function sets the
// scene: it creates the shared objects with Make, spawns participants and registers final
// checks; the participants start only after it returns, all at once, in an order the seed
// decides. Members may be called from the scenario function; Check, Random and Pick also from
// participants (they are thread-safe). The Context lives until the run ends: participants may
// keep a reference to it.
class TC_API Context
{
public:
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // The run's seed (also in its Result).
    std::uint64_t Seed() const noexcept;
    Mode RunMode() const noexcept;

    // Constructs a T the participants share, owned by the run: it is destroyed after every
    // participant has finished and the AtEnd checks have run (in reverse order of creation).
    // After a lost wake-up it is never destroyed, because a stuck waiter still refers to it.
    template <class T, class... Args>
    T& Make(Args&&... args)
    {
        // Held as a member of a final wrapper: a guide-style primitive derives privately from
        // ISuspendCallback, whose destructor is non-virtual, and destroying it as a member is
        // exact where destroying it as the object itself draws clang's non-virtual-dtor warning.
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

    // Adds a participant given as a blocking callable: it runs as a Task or a Thread, whichever
    // of those StressOptions::waiterKinds allows, chosen by the seed. `name` names it in reports
    // (and as the task's name in checked-mode hang reports). The callable is kept alive until
    // the run ends; an exception escaping it counts as a failed check.
    void Spawn(std::string name, BlockingBody body);
    // Adds a participant given both ways; it may run as a task, a thread or a coroutine.
    void Spawn(std::string name, BlockingBody body, CoroutineBody coroutine);
    // Adds a participant that can only run as a coroutine (whatever waiterKinds says).
    void SpawnCoroutine(std::string name, CoroutineBody coroutine);

    // Runs after every participant has finished (not after a hang), on the calling thread, in
    // order of registration: the place for checks on final state.
    void AtEnd(std::function<void()> check);

    // Records a failed check unless `condition` holds; the run then fails and its report says
    // `what`. Thread-safe; never throws or stops the participant.
    bool Check(bool condition, std::string_view what);

    // A number from the run's seeded sequence (the same sequence for the same seed as long as
    // the calls happen in the same order, so call it from the scenario function when the run
    // must replay). Thread-safe.
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
