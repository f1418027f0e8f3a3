/* Context switch for AArch64 (AAPCS64).
 *
 * void* TC_SwitchContext(void** saveSp, void* loadSp, void* message)
 *   Saves the callee-saved set the ABI names -- x19-x28, the frame pointer x29, the link
 *   register x30, the low halves d8-d15 of v8-v15 -- and FPCR on the current stack, stores sp to
 *   *saveSp, loads loadSp and restores the same set. The context switched to sees `message` as
 *   its own call's return value (a fresh one: as its entry's second argument). Frame layout
 *   (ContextAsm.cpp mirrors it):
 *     [sp+0]   x19 x20 ... [sp+80] x29 x30   [sp+96] d8 ... d15   [sp+160] fpcr   (176 bytes)
 */
/* The part both entries share: saves the set above on the switcher's stack, stores sp to
 * *x0, moves to the stack in x1 and restores the other side's set from its frame; sp is left at
 * that frame (the caller pops it). */
    .macro TC_SWITCH_FRAMES
    sub     sp, sp, #176
    stp     x19, x20, [sp, #0]
    stp     x21, x22, [sp, #16]
    stp     x23, x24, [sp, #32]
    stp     x25, x26, [sp, #48]
    stp     x27, x28, [sp, #64]
    stp     x29, x30, [sp, #80]
    stp     d8,  d9,  [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    mrs     x9, fpcr
    str     x9, [sp, #160]
    mov     x9, sp
    str     x9, [x0]
    mov     sp, x1
    ldr     x9, [sp, #160]
    msr     fpcr, x9
    ldp     x19, x20, [sp, #0]
    ldp     x21, x22, [sp, #16]
    ldp     x23, x24, [sp, #32]
    ldp     x25, x26, [sp, #48]
    ldp     x27, x28, [sp, #64]
    ldp     x29, x30, [sp, #80]
    ldp     d8,  d9,  [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    .endm

    .text
    .globl  TC_SwitchContext
    .type   TC_SwitchContext, %function
    .p2align 4
TC_SwitchContext:
    .cfi_startproc
    TC_SWITCH_FRAMES
    add     sp, sp, #176
    mov     x0, x2
    ret
    .cfi_endproc
    .size   TC_SwitchContext, .-TC_SwitchContext

/* void* TC_SwitchContextThen(void** saveSp, void* loadSp, void* message, void (*then)(void*))
 *   The same switch, except that once the other side's registers are back it calls
 *   then(message) on the other side's stack before continuing there, and continues with
 *   `br x30` rather than `ret`: the scheduler calls this as the last thing a suspend does (a
 *   tail call), so x30 is the suspending code's own return address, and an indirect branch is
 *   predicted from the branch history, where `ret` would be predicted from the return stack,
 *   which holds the switcher's callers (Switch_x86_64_sysv.S has the measurements). While
 *   `then` runs, x30 and the message wait in the frame's last 16 bytes (FPCR and padding,
 *   already restored); sp is 16-byte aligned there. */
    .globl  TC_SwitchContextThen
    .type   TC_SwitchContextThen, %function
    .p2align 4
TC_SwitchContextThen:
    .cfi_startproc
    TC_SWITCH_FRAMES
    stp     x30, x2, [sp, #160]
    mov     x0, x2
    blr     x3
    ldp     x30, x0, [sp, #160]     /* x0: the message, returned on the other side */
    add     sp, sp, #176
    br      x30
    .cfi_endproc
    .size   TC_SwitchContextThen, .-TC_SwitchContextThen

/* First code a fresh context runs: x19 holds the argument, x20 the entry, which never returns,
 * x0 the first message. */
    .globl  TC_ContextStart
    .type   TC_ContextStart, %function
    .p2align 4
TC_ContextStart:
    .cfi_startproc
    .cfi_undefined x30
    mov     x1, x0
    mov     x0, x19
    blr     x20
    brk     #0
    .cfi_endproc
    .size   TC_ContextStart, .-TC_ContextStart

    .section .note.GNU-stack,"",%progbits
