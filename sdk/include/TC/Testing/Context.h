#pragma once
// Context: a scenario's handle on its run: participants, shared objects, checks, random numbers.

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

// Runs as a task or a thread.
using BlockingBody = std::function<void()>;
// Called once; its coroutine runs on the run's scheduler.
using CoroutineBody = std::function<TC::Strands::Task<void>()>;

// Handed to the scenario; participants start after it returns, in an order the seed decides.
//   auto& box = ctx.Make<Mailbox>();
//   ctx.Spawn("taker", [&] { ctx.Check(box.Take() == 1, "the value"); });
/// - Check, Random and Pick are thread-safe, also for participants; the rest: scenario only.
/// - Lives until the run ends.
class TC_API Context
{
public:
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    std::uint64_t Seed() const noexcept;
    Mode RunMode() const noexcept;

    // Constructs a shared T, destroyed (reverse order) after all finished and AtEnd ran; never
    // after a lost wake-up.
    template <class T, class... Args>
    T& Make(Args&&... args)
    {
        // A final wrapper's member: avoids clang's non-virtual-dtor warning.
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

    // Adds a blocking participant (Task or Thread, within waiterKinds). Kept until the run ends;
    // an escaping exception is a failed check.
    void Spawn(std::string name, BlockingBody body);
    // Adds one that may run as a task, a thread or a coroutine.
    void Spawn(std::string name, BlockingBody body, CoroutineBody coroutine);
    // Adds a coroutine participant (whatever waiterKinds says).
    void SpawnCoroutine(std::string name, CoroutineBody coroutine);

    // Runs after every participant finished (not after a hang), in order.
    void AtEnd(std::function<void()> check);

    // Records a failed check `what` unless `condition`; returns it. Thread-safe; never throws.
    bool Check(bool condition, std::string_view what);

    // Next of the run's seeded numbers (replays if called in the same order).
    std::uint64_t Random() noexcept;
    // In [0, n) from the same sequence; n nonzero.
    std::size_t Pick(std::size_t n) noexcept;

private:
    friend class detail::RunState;
    explicit Context(detail::RunState& run) noexcept : run_(run) {}
    void Own(std::shared_ptr<void> object);

    detail::RunState& run_;
};
} // namespace TC::Testing
