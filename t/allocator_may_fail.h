/* wafer — SPDX-License-Identifier: MIT
 *
 * allocator_may_fail.h: for a test that asks for more memory than there
 * is (a plugin must answer WAFER_ERROR_OUT_OF_MEMORY, not crash). Under a
 * sanitizer (WAFER_SANITIZED) its allocator aborts on such a request by
 * default; this makes it fail the way malloc does instead. The runtime
 * looks the hooks up dynamically, so they must escape
 * -fvisibility=hidden. Include it in one file of the test program. */
#ifndef WAFER_T_ALLOCATOR_MAY_FAIL_H
#define WAFER_T_ALLOCATOR_MAY_FAIL_H

#ifdef WAFER_SANITIZED
#define SANITIZER_HOOK __attribute__((visibility("default"), used))
SANITIZER_HOOK const char *__asan_default_options(void);
SANITIZER_HOOK const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
SANITIZER_HOOK const char *__tsan_default_options(void);
SANITIZER_HOOK const char *__tsan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

#endif
