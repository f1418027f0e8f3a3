#pragma once
// ChromeTrace: scheduler hooks that record every task's and coroutine chain's zones, per thread,
// and write them as Chrome Trace Event Format JSON (chrome://tracing, ui.perfetto.dev).
//   ChromeTrace trace;  trace.Attach(options.hooks);  ...run, stop the schedulers...
//   trace.Write("game-loop.trace.json");

#include <TC/Scheduler.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

class ChromeTrace
{
public:
    ChromeTrace() : start_(std::chrono::steady_clock::now()) {}
    ChromeTrace(const ChromeTrace&) = delete;
    ChromeTrace& operator=(const ChromeTrace&) = delete;

    // Adds recording to the task and coroutine hooks, after (enter) or before (leave) the ones
    // `hooks` already has. Attach it to every scheduler to trace; the trace outlives them.
    void Attach(TC::SchedulerHooks& hooks)
    {
        hooks.taskEnter = [this, inner = std::move(hooks.taskEnter)](TC::TaskHandle task, const char* name)
        {
            if (inner)
                inner(task, name);
            Record('B', Kind::Task, task.Id(), name);
        };
        hooks.taskLeave = [this, inner = std::move(hooks.taskLeave)](TC::TaskHandle task, const char* name)
        {
            Record('E', Kind::Task, task.Id(), name);
            if (inner)
                inner(task, name);
        };
        hooks.coroutineEnter = [this, inner = std::move(hooks.coroutineEnter)](std::uint64_t id, const char* name)
        {
            if (inner)
                inner(id, name);
            Record('B', Kind::Coroutine, id, name);
        };
        hooks.coroutineLeave = [this, inner = std::move(hooks.coroutineLeave)](std::uint64_t id, const char* name)
        {
            Record('E', Kind::Coroutine, id, name);
            if (inner)
                inner(id, name);
        };
    }

    // Writes what was recorded; call once no scheduler it is attached to runs anything.
    bool Write(const char* path) const
    {
        std::FILE* file = std::fopen(path, "w");
        if (!file)
            return false;
        std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", file);
        bool first = true;
        for (const auto& buffer : buffers_)
        {
            std::fprintf(file,
                         "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                         "\"args\":{\"name\":\"thread %d\"}}",
                         first ? "" : ",\n", buffer->tid, buffer->tid);
            first = false;
            for (const Event& event : buffer->events)
            {
                std::fprintf(file,
                             ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"%c\",\"ts\":%lld.%03lld,"
                             "\"pid\":1,\"tid\":%d,\"args\":{\"id\":%llu}}",
                             Escaped(event.name).c_str(),
                             event.kind == Kind::Task ? "task" : "coroutine", event.phase,
                             static_cast<long long>(event.nanoseconds / 1000),
                             static_cast<long long>(event.nanoseconds % 1000), buffer->tid,
                             static_cast<unsigned long long>(event.id));
            }
        }
        std::fputs("\n]}\n", file);
        return std::fclose(file) == 0;
    }

    std::size_t Events() const
    {
        std::size_t count = 0;
        for (const auto& buffer : buffers_)
            count += buffer->events.size();
        return count;
    }

private:
    enum class Kind : char
    {
        Task,
        Coroutine,
    };
    struct Event
    {
        std::int64_t nanoseconds; // since the trace began
        std::uint64_t id;
        const char* name; // a stable string, as the hooks require
        char phase;       // 'B' or 'E'
        Kind kind;
    };
    // One thread's events: only that thread appends, so recording takes no lock.
    struct ThreadBuffer
    {
        int tid;
        std::vector<Event> events;
    };

    void Record(char phase, Kind kind, std::uint64_t id, const char* name)
    {
        const auto now = std::chrono::steady_clock::now() - start_;
        ThisThreadBuffer().events.push_back(
            {std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(), id, name, phase, kind});
    }

    // The lock is taken once per thread and trace, when the thread records its first event.
    ThreadBuffer& ThisThreadBuffer()
    {
        thread_local const ChromeTrace* owner = nullptr;
        thread_local ThreadBuffer* buffer = nullptr;
        if (owner != this)
        {
            std::lock_guard guard(lock_);
            buffers_.push_back(std::make_unique<ThreadBuffer>());
            buffer = buffers_.back().get();
            buffer->tid = static_cast<int>(buffers_.size());
            buffer->events.reserve(1 << 14);
            owner = this;
        }
        return *buffer;
    }

    static std::string Escaped(const char* text)
    {
        std::string out;
        for (const char* c = text ? text : ""; *c; ++c)
        {
            if (*c == '"' || *c == '\\')
                out += '\\';
            if (static_cast<unsigned char>(*c) >= 0x20)
                out += *c;
        }
        return out;
    }

    const std::chrono::steady_clock::time_point start_;
    std::mutex lock_;
    std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
};
