/* wafer — SPDX-License-Identifier: MIT
 *
 * tls.h: WAFER__TLS_HOT, the storage class of the thread-locals read on
 * every command (the direct channel's owner mark, the out-of-memory
 * guard, the thread's selected queue, the trace's re-entry flag, the
 * error detail's pointer, which the mpsc runner clears).
 *
 * In a shared library a thread-local is by default reached through
 * __tls_get_addr, a call of some 25 instructions; two of them made about
 * a quarter of the core's cost of an event record or queue wait
 * (callgrind, cuda stand-in). The initial-exec model reads them at a
 * fixed offset from the thread pointer instead. Its one condition: a
 * library loaded with dlopen (Python's ctypes) must find room in the
 * static TLS that glibc keeps spare for such libraries (512 bytes by
 * default); these few bytes do. Larger thread-locals stay as they are. */
#ifndef WAFER_LIB_TLS_H
#define WAFER_LIB_TLS_H

#define WAFER__TLS_HOT _Thread_local __attribute__((tls_model("initial-exec")))

#endif
