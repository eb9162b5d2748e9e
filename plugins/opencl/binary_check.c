/* wafer — SPDX-License-Identifier: MIT
 *
 * binary_check.c: a cached program binary checked before it goes to the
 * driver. The cache's checksum only says the file is what was written;
 * a file cut short and given a new checksum passes it, and PoCL trusts
 * the sizes inside its binaries (it asserts, and aborts the process, on
 * one that runs past the end). So a PoCL binary is walked here first:
 *
 *   "poclbin\0"  u64 device id  u32 version  u32 kernel count  u64 flags
 *   u32 root entry count  41 bytes build hash  [u64 when flags bit 1]
 *   per root entry: u64 size, then files of that many bytes
 *   per kernel: u64 record size  u64 files size  u32 ...; the record's
 *               files at its end
 *   a file: u32 name length (not 0), name, u32 length, content
 *
 * all little-endian, the layout of PoCL's binary versions 9 to 11 (PoCL
 * 3.0 and later). Every size must stay inside the binary and the last
 * kernel end at its last byte. A PoCL binary of another version is not
 * believed (built again from source). Other drivers' binaries are not
 * walked: their drivers check them. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "plugins/opencl/ocl_plugin.h"

#define POCL_MAGIC "poclbin"
#define POCL_HASH_SIZE 41
#define POCL_FLAG_SCOPE_VARS 2u
#define POCL_KERNEL_HEAD 20 /* record size, files size, arginfo size */

struct reader {
	const unsigned char *data;
	size_t size, at;
};

static int read_le(struct reader *r, size_t bytes, uint64_t *out)
{
	if (r->size - r->at < bytes)
		return 0;
	*out = 0;
	for (size_t i = 0; i < bytes; i++)
		*out |= (uint64_t)r->data[r->at + i] << (8 * i);
	r->at += bytes;
	return 1;
}

static int skip(struct reader *r, uint64_t bytes)
{
	if (r->size - r->at < bytes)
		return 0;
	r->at += (size_t)bytes;
	return 1;
}

/* The files filling [at, at + size) exactly. */
static int check_files(struct reader *r, uint64_t size)
{
	if (r->size - r->at < size)
		return 0;
	struct reader files = {r->data, r->at + (size_t)size, r->at};
	while (files.at < files.size) {
		uint64_t name, content;
		if (!read_le(&files, 4, &name) || !name ||
		    !skip(&files, name) || !read_le(&files, 4, &content) ||
		    !skip(&files, content))
			return 0;
	}
	r->at = files.size;
	return 1;
}

int ocl_binary_check(const unsigned char *binary, size_t size, char *why,
		     size_t why_size)
{
	struct reader r = {binary, size, 0};
	uint64_t version, kernels, flags, roots, n;

	if (size < sizeof POCL_MAGIC ||
	    memcmp(binary, POCL_MAGIC, sizeof POCL_MAGIC) != 0)
		return 1;
	r.at = sizeof POCL_MAGIC;
	if (!skip(&r, 8) || !read_le(&r, 4, &version) ||
	    !read_le(&r, 4, &kernels) || !read_le(&r, 8, &flags) ||
	    !read_le(&r, 4, &roots) || !skip(&r, POCL_HASH_SIZE) ||
	    ((flags & POCL_FLAG_SCOPE_VARS) && !skip(&r, 8))) {
		snprintf(why, why_size,
			 "a PoCL binary of %zu bytes, cut short in its header",
			 size);
		return 0;
	}
	if (version < 9 || version > 11) {
		snprintf(why, why_size,
			 "a PoCL binary of version %" PRIu64
			 ", whose layout this plugin cannot check (it knows "
			 "9 to 11)",
			 version);
		return 0;
	}
	for (uint64_t i = 0; i < roots; i++)
		if (!read_le(&r, 8, &n) || !check_files(&r, n)) {
			snprintf(why, why_size,
				 "a PoCL binary of %zu bytes, cut short or "
				 "damaged in its program files (entry %" PRIu64
				 " of %" PRIu64 ")",
				 size, i + 1, roots);
			return 0;
		}
	for (uint64_t i = 0; i < kernels; i++) {
		size_t start = r.at;
		uint64_t record, files;
		if (!read_le(&r, 8, &record) || !read_le(&r, 8, &files) ||
		    record < POCL_KERNEL_HEAD ||
		    files > record - POCL_KERNEL_HEAD ||
		    size - start < record) {
			snprintf(why, why_size,
				 "a PoCL binary of %zu bytes, cut short or "
				 "damaged in kernel %" PRIu64 " of %" PRIu64
				 " (at byte %zu)",
				 size, i + 1, kernels, start);
			return 0;
		}
		r.at = start + (size_t)(record - files);
		if (!check_files(&r, files)) {
			snprintf(why, why_size,
				 "a PoCL binary of %zu bytes, damaged in the "
				 "files of kernel %" PRIu64 " of %" PRIu64,
				 size, i + 1, kernels);
			return 0;
		}
	}
	if (r.at != size) {
		snprintf(why, why_size,
			 "a PoCL binary of %zu bytes whose records end at "
			 "byte %zu",
			 size, r.at);
		return 0;
	}
	return 1;
}
