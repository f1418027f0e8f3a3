# gdb extension for ConcurrentTasks: lists a program's tasks and shows a suspended task's stack.
#
#   tc tasks              every live task of every scheduler: id, name, state, what it waits on
#                         and for how long; then the converted threads that wait
#   tc bt [ID|NAME]       a suspended task's backtrace (no argument: every suspended task's)
#   tc task [ID|NAME]     makes the task's frames gdb's current view; no argument goes back
#
# It reads the scheduler registry from memory and calls no function of the program, so it works
# on a live process and on a core file alike. x86-64 System V only (the assembly context switch);
# it needs the program's debug information (-g). Loaded by gdb from the library's
# .debug_gdb_scripts section, or by hand: `source share/ConcurrentTasks/gdb/concurrent_tasks.py`.
import re
import struct
import time

import gdb
import gdb.unwinder

# TaskRunState (kernel/src/Task.h).
_FREE, _QUEUED, _READY, _SUSPENDED, _SUSPENDED_TIMED, _FINISHED = range(6)
# The frame the x86-64 switch saves at a suspended context's stack pointer
# (kernel/src/context/Switch_x86_64_sysv.S): control words, r15, r14, r13, r12, rbx, rbp, rip.
_SAVED = ("control", "r15", "r14", "r13", "r12", "rbx", "rbp", "rip")


def _memory(address, size):
    return bytes(gdb.selected_inferior().read_memory(address, size))


def _u64(address):
    return struct.unpack("<Q", _memory(address, 8))[0]


def _u8(address):
    return _memory(address, 1)[0]


def _string(value):
    try:
        return value.string()
    except gdb.error:
        return "?"


def _symbol_of(address, prefix):
    """The X of the symbol `prefix X` at `address` (a vtable or a typeinfo object), or None."""
    try:
        text = gdb.execute("info symbol 0x%x" % address, to_string=True)
    except gdb.error:
        return None
    match = re.match(re.escape(prefix) + r"(.*?)( \+ \d+)? in section", text)
    return match.group(1) if match else None


def _vtable_type(address):
    """The class whose vtable the object at `address` points to, or None."""
    if not address:
        return None
    try:
        return _symbol_of(_u64(address), "vtable for ")
    except gdb.MemoryError:
        return None


def _is_core_file():
    try:
        return "core dump" in gdb.execute("info target", to_string=True)
    except gdb.error:
        return False


class _Task(object):
    def __init__(self, block, running):
        task = block["task"]
        self.id = int(block["id"])
        self.value = task.dereference()
        self.address = int(task)
        self.name = _string(self.value["name"])
        self.state = _u8(int(self.value["runState"].address))
        self.scheduler = int(self.value["scheduler"])
        self.worker = running.get(self.address)

    def saved_sp(self):
        return int(self.value["context"]["backend"].cast(gdb.lookup_type("unsigned long")))

    def is_suspended(self):
        return self.worker is None and self.state in (_SUSPENDED, _SUSPENDED_TIMED, _READY) and \
            self.saved_sp() != 0

    def waits_on(self):
        return _waits_on(self.value["entry"])

    def describe(self, now):
        line = "task %d '%s' " % (self.id, self.name)
        if self.worker is not None and self.state != _FINISHED:
            index, threads = self.worker
            return line + ("running on worker %d" % index if threads else "running on the host thread")
        if self.state in (_QUEUED, _READY):
            return line + "ready"
        if self.state == _FINISHED:
            return line + "finished, not joined"
        entry = self.value["entry"]
        line += "suspended" + _suspended_for(entry, now)
        timer = entry["timer_"]
        if self.state == _SUSPENDED_TIMED and int(timer):
            deadline = int(timer.dereference()["deadline"])
            if now is None or not now[1]:
                line += " until a deadline (steady clock %.3f s)" % (deadline / 1e9)
            else:
                line += " until a deadline in %d ms" % ((deadline - now[0]) // 1000000)
        return line + ", " + self.waits_on()


def _suspended_for(entry, now):
    """" for N s" from the entry's stamp (TC::DumpTasks' form); in a core file, measured to the
    newest worker clock reading in it: " for at least N s". Empty when the wait has no stamp."""
    at = int(entry["suspendedAt_"])
    if not at or not now:
        return ""
    seconds = max(now[0] - at, 0) / 1e9
    return (" for %.3f s" if now[1] else " for at least %.3f s") % seconds


def _pointer_field(value, field):
    """A pointer member's value, plain or std::atomic (same layout), or 0 when absent."""
    if field not in [f.name for f in value.type.fields()]:
        return 0
    return _u64(int(value[field].address))


def _waits_on(entry):
    name, address = None, 0
    name_at = _pointer_field(entry, "waitedOnName_")
    if name_at:
        name = _string(gdb.Value(name_at).cast(gdb.lookup_type("char").pointer()))
    # Checked builds record what ISuspendCallback::WaitedOn said at suspension.
    address = _pointer_field(entry, "waitedOn_")
    if address:
        type_info = _pointer_field(entry, "callbackType_")
        if not name and type_info:
            name = _symbol_of(type_info, "typeinfo for ")
        name = name or _vtable_type(address)
    if not address:
        # Other builds: the callback's dynamic type; a callback that stands for its
        # primitive (a per-wait node, the creator's slot) keeps it in `owner_`.
        callback = int(entry["callback_"])
        address, name = callback, _vtable_type(callback)
        try:
            typed = entry["callback_"].cast(gdb.lookup_type(name).pointer()).dereference()
            if "owner_" in [f.name for f in typed.type.fields()]:
                owner = typed["owner_"]
                address = int(owner)
                name = _vtable_type(address) or str(owner.type.target().unqualified())
        except (gdb.error, TypeError):
            pass
    return "waits on %s at 0x%x" % (name or "?", address)


def _schedulers():
    """[(name, has worker threads, worker count, core address, [tasks])], newest first."""
    try:
        record = gdb.parse_and_eval("'TC::detail::coreRegistry'")
    except gdb.error:
        raise gdb.GdbError("tc: no ConcurrentTasks scheduler registry in this program "
                           "(is it linked with TC::kernel, with debug information?)")
    cores = []
    running = {}
    while int(record):
        core = record.dereference()
        threads = bool(core["hasWorkerThreads"])
        for i in range(int(core["workerCount"])):
            worker = core["workers"][i].dereference()
            current = int(worker["current"])
            if current:
                running[current] = (int(worker["index"]), threads)
        cores.append(core)
        record = core["next"]
    blocks = []
    for core in cores:
        block = core["blocks"]
        while int(block):
            blocks.append(block.dereference())
            block = block.dereference()["next"]
    tasks = [_Task(block, running) for block in blocks]
    tasks = [task for task in tasks if task.state != _FREE]
    result = []
    for core in cores:
        address = int(core["core"])
        mine = [task for task in tasks if task.scheduler == address]
        result.append((_string(core["name"]), bool(core["hasWorkerThreads"]),
                       int(core["workerCount"]), address, mine))
    return result


def _newest_tick():
    """The newest reading of any worker's coarse clock (Worker::tick), or None."""
    newest = None
    record = gdb.parse_and_eval("'TC::detail::coreRegistry'")
    while int(record):
        core = record.dereference()
        for i in range(int(core["workerCount"])):
            tick = int(core["workers"][i].dereference()["tick"])
            newest = tick if newest is None or tick > newest else newest
        record = core["next"]
    return newest


def _waiting_threads():
    """[(OS thread id, name, entry)] of the converted threads whose wait is shown."""
    try:
        state = gdb.parse_and_eval("'TC::detail::threadRegistry'")
    except gdb.error:
        return []
    names = {}
    for thread in gdb.selected_inferior().threads():
        names[thread.ptid[1]] = thread.name or ""
    result = []
    while int(state):
        thread = state.dereference()
        if int(thread["waiting"]):
            tid = int(thread["osThreadId"])
            result.append((tid, names.get(tid, ""), thread["waiting"].dereference()))
        state = thread["nextListed"]
    return result


def _all_tasks():
    return [task for scheduler in _schedulers() for task in scheduler[4]]


def _find(argument):
    tasks = _all_tasks()
    for task in tasks:
        if argument == str(task.id) or argument == task.name:
            return task
    raise gdb.GdbError("tc: no live task with id or name '%s'" % argument)


# ---- a suspended task's frames, through an unwinder (no register is written) ----

class _FrameId(object):
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class _TaskUnwinder(gdb.unwinder.Unwinder):
    """While a task is selected, the innermost frame of the selected thread unwinds into the
    task's saved context: frame #1 and outward are the task's frames."""

    def __init__(self):
        super(_TaskUnwinder, self).__init__("ConcurrentTasks suspended task")
        self.sp = None
        self.thread = None

    def __call__(self, pending_frame):
        if self.sp is None or pending_frame.level() != 0 or gdb.selected_thread() != self.thread:
            return None
        saved = dict(zip(_SAVED, struct.unpack("<8Q", _memory(self.sp, 64))))
        pc = int(pending_frame.read_register("rip"))
        # Frame #0 is given an id just inside the task's stack, so the task's frames count as
        # its callers.
        u64 = gdb.lookup_type("unsigned long")
        info = pending_frame.create_unwind_info(
            _FrameId(gdb.Value(self.sp - 16).cast(u64), gdb.Value(pc).cast(u64)))
        for register in ("rip", "rbp", "rbx", "r12", "r13", "r14", "r15"):
            info.add_saved_register(register, gdb.Value(saved[register]).cast(u64))
        info.add_saved_register("rsp", gdb.Value(self.sp + 64).cast(u64))
        return info


_unwinder = _TaskUnwinder()
gdb.unwinder.register_unwinder(None, _unwinder, replace=True)


def _select(task):
    if task is None:
        _unwinder.sp = None
        _unwinder.thread = None
    else:
        _unwinder.sp = task.saved_sp()
        _unwinder.thread = gdb.selected_thread()
    gdb.invalidate_cached_frames()


def _print_frames(task):
    _select(task)
    try:
        frame = gdb.newest_frame().older()
        level = 0
        while frame is not None and level < 64:
            sal = frame.find_sal()
            where = ""
            if sal.symtab is not None:
                where = " at %s:%d" % (sal.symtab.filename, sal.line)
            gdb.write("#%-2d 0x%016x in %s%s\n" % (level, frame.pc(), frame.name() or "??", where))
            frame = frame.older()
            level += 1
    finally:
        _select(None)


class _Prefix(gdb.Command):
    """ConcurrentTasks: `tc tasks`, `tc bt [ID|NAME]`, `tc task [ID|NAME]`."""

    def __init__(self):
        super(_Prefix, self).__init__("tc", gdb.COMMAND_STACK, gdb.COMPLETE_NONE, True)


class _Tasks(gdb.Command):
    """Lists every live task of every scheduler: id, name, state, what it waits on."""

    def __init__(self):
        super(_Tasks, self).__init__("tc tasks", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        # (steady-clock now, exact): the host's monotonic clock is the program's steady clock; a
        # core file's best is the newest worker clock reading in it.
        if _is_core_file():
            tick = _newest_tick()
            now = None if tick is None else (tick, False)
        else:
            now = (time.monotonic_ns(), True)
        for name, threads, count, address, tasks in _schedulers():
            kind = "%d worker(s)" % count if threads else "host-pumped"
            gdb.write("scheduler '%s' (%s) at 0x%x:\n" % (name, kind, address))
            if not tasks:
                gdb.write("  no live task\n")
            for task in tasks:
                gdb.write("  " + task.describe(now) + "\n")
        waiting = _waiting_threads()
        if waiting:
            gdb.write("converted threads waiting:\n")
        for tid, name, entry in waiting:
            gdb.write("  thread %d '%s' suspended%s, %s\n" % (tid, name, _suspended_for(entry, now),
                                                            _waits_on(entry)))


class _Backtrace(gdb.Command):
    """Backtrace of a suspended task (by id or name); with no argument, of every suspended task."""

    def __init__(self):
        super(_Backtrace, self).__init__("tc bt", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        argument = argument.strip()
        tasks = [_find(argument)] if argument else [t for t in _all_tasks() if t.is_suspended()]
        for task in tasks:
            gdb.write("task %d '%s':\n" % (task.id, task.name))
            if not task.is_suspended():
                gdb.write("  not suspended (its frames are a thread's: see `info threads`)\n")
                continue
            _print_frames(task)


class _SelectTask(gdb.Command):
    """Makes a suspended task's frames the current view (`frame`, `up`, `info locals` work);
    with no argument, goes back to the thread's own frames."""

    def __init__(self):
        super(_SelectTask, self).__init__("tc task", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        argument = argument.strip()
        if not argument:
            _select(None)
            gdb.execute("frame 0")
            return
        task = _find(argument)
        if not task.is_suspended():
            raise gdb.GdbError("tc: task '%s' is not suspended" % task.name)
        _select(task)
        gdb.write("task %d '%s' (its innermost frame is #1; `tc task` goes back):\n" % (task.id, task.name))
        gdb.execute("frame 1")


_Prefix()
_Tasks()
_Backtrace()
_SelectTask()
