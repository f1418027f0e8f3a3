/* Context switch for x86-64, System V ABI (Linux, BSD, macOS-style ELF/Mach-O not covered).
 *
 * void* TC_SwitchContext(void** saveSp, void* loadSp, void* message)
 *   Saves exactly what the ABI says a callee must preserve -- rbx, rbp, r12-r15, MXCSR's
 *   control bits and the x87 control word -- on the current stack, stores the stack pointer to
 *   *saveSp, loads loadSp and restores the same set from there. The context switched to sees
 *   `message` as the return value of its own TC_SwitchContext call (or, when it is fresh, as
 *   its entry's second argument), so a switcher can hand over what both sides need without
 *   thread-local storage. rip travels as the return address, but is popped into r8
 *   (caller-saved) and reached with an indirect jump: a `ret` would be predicted to return to
 *   this call's own caller, which it never does, and that misprediction tripled the cost of a
 *   switch (23.7 ns against 7.9 ns for Boost.Context, which jumps the same way).
 *   MXCSR's six exception flags are status, which the ABI makes caller-saved: they stay with
 *   the thread, and the other side's control bits are loaded (ldmxcsr) only when they differ
 *   from this side's. On Intel (Xeon, family 6 model 167) a stmxcsr after the flags changed
 *   costs 14-27 ns, and a switch that reloaded the other side's flags changed them whenever one
 *   side had raised one the other had not -- any inexact result does: 34 ns per switch there,
 *   against 3.9 ns for Boost.Context, whose two sides had the same flags (guides/performance.md).
 *   Comparing needs this side's stored MXCSR read back, which waits for stmxcsr (4 ns on AMD
 *   Zen 5). The x87 control word has no flags; it is reloaded always (fldcw: 0.7 ns on Zen 5).
 *   Frame layout at a saved stack pointer (ContextAsm.cpp mirrors it):
 *     [sp+0]  MXCSR (low 4 bytes), x87 control word (next 2 bytes)
 *     [sp+8]  r15   [sp+16] r14   [sp+24] r13   [sp+32] r12
 *     [sp+40] rbx   [sp+48] rbp   [sp+56] return address
 */
/* Loads the control words of the frame at rsp (the other side's), given this thread's MXCSR
 * in eax: the x87 control word always, MXCSR's control bits only when they differ, keeping this
 * thread's six status flags. Clobbers r9. */
    .macro TC_LOAD_CONTROL_WORDS
    fldcw   4(%rsp)
    movl    (%rsp), %r9d
    xorl    %eax, %r9d
    testl   $0xFFFFFFC0, %r9d       /* the control bits (all but the six flags) differ? */
    jz      1f
    andl    $0x3F, %eax
    movl    (%rsp), %r9d
    andl    $0xFFFFFFC0, %r9d       /* the other side's control bits, this thread's flags */
    orl     %eax, %r9d
    movl    %r9d, (%rsp)
    ldmxcsr (%rsp)
1:
    .endm

/* The part both full entries share: saves the callee-saved set and the control words on the
 * switcher's stack, stores rsp to *rdi, moves to the stack in rsi and loads the control words
 * saved there. rsp then points at the other side's frame. Clobbers rax and r9; rcx carries
 * TC_SwitchContextThen's `then`. */
    .macro TC_SAVE_AND_SWITCH_STACKS
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, (%rdi)
    movl    (%rsp), %eax            /* this thread's MXCSR: its status flags stay in force */
    movq    %rsi, %rsp
    TC_LOAD_CONTROL_WORDS
    .endm

    .text
    .globl  TC_SwitchContext
    .type   TC_SwitchContext, @function
    .p2align 4
TC_SwitchContext:
    .cfi_startproc
    TC_SAVE_AND_SWITCH_STACKS
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    movq    %rdx, %rax              /* the message, returned on the other side */
    popq    %r8
    jmp     *%r8
    .cfi_endproc
    .size   TC_SwitchContext, .-TC_SwitchContext

/* void* TC_SwitchContextThen(void** saveSp, void* loadSp, void* message, void (*then)(void*))
 *   The same switch, except that once the other side's registers are back it calls
 *   then(message) on the other side's stack before continuing there. The scheduler passes its
 *   post-switch step (the suspended task's OnSuspended, a finished task's clean-up) and calls
 *   this as the last thing a suspend does, so the compiler makes the call a jump: the return
 *   address saved here is then the suspending code's own, and the other side continues in its
 *   caller through the indirect jump below, which the predictor learns (a ping-pong alternates
 *   two targets). Returning through the suspend's own frames instead costs one mispredicted
 *   `ret` per level whose caller differs between the two sides, since the return-stack buffer
 *   holds the switcher's callers: 12.4 against 4.2 ns per switch, one such level each way.
 *   The call to `then` is made with rsp 16-byte aligned, with the message in rbx; the other
 *   side's callee-saved registers are loaded after it returns. */
    .globl  TC_SwitchContextThen
    .type   TC_SwitchContextThen, @function
    .p2align 4
TC_SwitchContextThen:
    .cfi_startproc
    TC_SAVE_AND_SWITCH_STACKS
    /* rsp+8..rsp+56 hold r15..rbp, restored only once `then` has returned: meanwhile rbx keeps
     * the message (`then` preserves it), so nothing is stored between the switch and `then`'s
     * own code. rsp is 16-byte aligned here: the frame sits right below the return address,
     * which a call left at an address of 8 modulo 16. */
    movq    %rdx, %rbx
    movq    %rdx, %rdi
    callq   *%rcx
    movq    %rbx, %rax              /* the message, returned on the other side */
    movq    8(%rsp), %r15
    movq    16(%rsp), %r14
    movq    24(%rsp), %r13
    movq    32(%rsp), %r12
    movq    40(%rsp), %rbx
    movq    48(%rsp), %rbp
    addq    $56, %rsp
    popq    %r8
    jmp     *%r8
    .cfi_endproc
    .size   TC_SwitchContextThen, .-TC_SwitchContextThen

/* First code a fresh context runs when a full switch starts it: r15 holds the argument, r14 the
 * entry function, which never returns, rax the first message. rsp is 16-byte aligned here, as
 * the call requires. ContextAsm.cpp's initial frame serves both this and the lean start. */
    .globl  TC_ContextStart
    .type   TC_ContextStart, @function
    .p2align 4
TC_ContextStart:
    .cfi_startproc
    .cfi_undefined rip
    movq    %r15, %rdi
    movq    %rax, %rsi
    callq   *%r14
    ud2
    .cfi_endproc
    .size   TC_ContextStart, .-TC_ContextStart

/* void* TC_SwitchContextLean(void** saveSp, void* loadSp, void* message), preserve_none
 *   The plain switch for callers compiled with clang's preserve_none convention (Context.h),
 *   which treat every general register but rsp, rbp and rbx as clobbered across the call and
 *   so save only the registers they have live. Arguments arrive in r12, r13, r14. It saves rbp,
 *   rbx and the control words:
 *     [sp+0] MXCSR, x87 control word   [sp+8] rbx   [sp+16] rbp   [sp+24] return address
 *   A context it saved is resumed by it alone: the full entries' frames differ. */
    .globl  TC_SwitchContextLean
    .type   TC_SwitchContextLean, @function
    .p2align 4
TC_SwitchContextLean:
    .cfi_startproc
    pushq   %rbp
    pushq   %rbx
    subq    $8, %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, (%r12)
    movl    (%rsp), %eax
    movq    %r13, %rsp
    TC_LOAD_CONTROL_WORDS
    addq    $8, %rsp
    popq    %rbx
    popq    %rbp
    movq    %r14, %rax              /* the message, returned on the other side */
    popq    %r8
    jmp     *%r8
    .cfi_endproc
    .size   TC_SwitchContextLean, .-TC_SwitchContextLean

/* First code a fresh context runs when the lean switch starts it: rbx holds the argument, rbp the
 * entry, rax the first message; rsp is 16-byte aligned (ContextAsm.cpp's initial frame). */
    .globl  TC_ContextStartLean
    .type   TC_ContextStartLean, @function
    .p2align 4
TC_ContextStartLean:
    .cfi_startproc
    .cfi_undefined rip
    movq    %rbx, %rdi
    movq    %rax, %rsi
    movq    %rbp, %rcx
    xorl    %ebp, %ebp
    callq   *%rcx
    ud2
    .cfi_endproc
    .size   TC_ContextStartLean, .-TC_ContextStartLean

    .section .note.GNU-stack,"",@progbits
