/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_direct: the `direct` strategy — one allocation of exactly the
 * size asked per handle (no rounding: a sanitizer must see the end of the
 * handle as the end of the allocation), freed at release after the queue,
 * never reused; destroy frees what the client forgot. */
#include "build-config.h"

#include "t/standins/fake_storage.h"
#include "t/tap.h"

int main(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(
		&f, &(struct fake_options){.vm = true, .async = true}, "direct",
		NULL);
	struct wafer__slice a, b, c;
	is_status(wafer__memory_reserve(m, 1000, &a), WAFER_OK, "reserve 1000");
	is_int((long long)f.allocs, 1, "one storage alloc");
	is_int((long long)f.objects[0].size, 1000, "of exactly 1000 bytes");
	is_int((long long)a.offset, 0, "at offset 0");
	is_int((long long)fake_usage(m).bytes_reserved, 1000, "reserved 1000");

	wafer__memory_release(m, &a);
	is_int((long long)f.frees, 1, "release frees at once");
	ok(f.quiesces >= 1, "after waiting for the queue");
	is_int((long long)fake_usage(m).bytes_reserved, 0, "nothing kept");

	wafer__memory_reserve(m, 1000, &b);
	is_int((long long)f.allocs, 2, "the same size allocates again");
	is_int((long long)fake_usage(m).reuse_hits, 0, "no reuse, ever");
	wafer__memory_reserve(m, 1, &c);
	is_int((long long)f.objects[1].size, 1, "1 byte is 1 byte");
	ok(c.resource != b.resource, "each handle its own allocation");

	wafer__memory_trim_cache(m);
	is_int((long long)fake_usage(m).bytes_reserved, 1001,
	       "trim leaves live allocations alone");
	is_int((long long)fake_close(&f, m), 0, "destroy freed the live ones");
	is_int((long long)f.violations, 0, "storage contract kept");
	fake_refuses(NULL, "direct", "[memory.direct]\nsize = 1\n",
		     "unknown option 'size'", "an option (direct takes none)");
	done_testing();
	return exit_status();
}
