// ExecutorScope's thread-local chain.

#include <TC/Checked.h>
#include <TC/Executor.h>

namespace TC
{
namespace
{
thread_local const ExecutorScope* innermost = nullptr;
}

ExecutorScope::ExecutorScope(IExecutor* executor) noexcept : executor_(executor), outer_(innermost)
{
    innermost = this;
}

ExecutorScope::~ExecutorScope()
{
    TC_CHECK(innermost == this, "ExecutorScope held across a suspension",
             "scopes must be destroyed in reverse order on the thread that made them");
    innermost = outer_;
}

const ExecutorScope* ExecutorScope::Innermost() noexcept
{
    asm volatile("" ::: "memory"); // never folded across a task switch (see CurrentThread)
    return innermost;
}
} // namespace TC
