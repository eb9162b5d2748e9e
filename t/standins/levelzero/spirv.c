/* wafer — SPDX-License-Identifier: MIT
 *
 * spirv.c: the test driver's SPIR-V reader (spirv.h). Two passes over the
 * instructions: the first collects types, constants, decorations and
 * entry points by result id; the second walks the functions and gives
 * each entry point its parameters. Sizes follow the OpenCL C layout rules
 * the kernels were compiled with (natural alignment, 64-bit pointers). */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/standins/levelzero/spirv.h"

#define SPV_MAGIC 0x07230203u

/* Opcodes and enumerants used below (SPIR-V specification 1.0). */
enum {
	OP_ENTRY_POINT = 15,
	OP_EXECUTION_MODE = 16,
	OP_TYPE_VOID = 19,
	OP_TYPE_BOOL = 20,
	OP_TYPE_INT = 21,
	OP_TYPE_FLOAT = 22,
	OP_TYPE_VECTOR = 23,
	OP_TYPE_ARRAY = 28,
	OP_TYPE_STRUCT = 30,
	OP_TYPE_POINTER = 32,
	OP_CONSTANT = 43,
	OP_FUNCTION = 54,
	OP_FUNCTION_PARAMETER = 55,
	OP_FUNCTION_END = 56,
	OP_DECORATE = 71,
	EXEC_MODEL_KERNEL = 6,
	EXEC_MODE_LOCAL_SIZE = 17,
	STORAGE_WORKGROUP = 4,
	STORAGE_CROSS_WORKGROUP = 5,
	DECORATION_FUNC_PARAM_ATTR = 38,
	FUNC_PARAM_ATTR_BYVAL = 2,
};

/* What the first pass knows about an id. */
struct id_info {
	uint16_t op;      /* the instruction that defined it */
	uint8_t byval;    /* decorated FuncParamAttr ByVal */
	uint32_t a, b, c; /* operands, by op (see type_size) */
	const uint32_t *members; /* OpTypeStruct: member types */
	uint32_t member_count;
	int entry;        /* index in the module's kernels, or -1 */
};

struct reader {
	const uint32_t *words;
	size_t count;
	uint32_t bound;
	struct id_info *ids;
	char *error;
	size_t error_size;
};

static int fail(struct reader *r, const char *why)
{
	snprintf(r->error, r->error_size, "%s", why);
	return -1;
}

/* Size and alignment of type |id| in bytes; 0 if unknown. */
static size_t type_size(const struct reader *r, uint32_t id, size_t *align,
			int depth)
{
	const struct id_info *t;
	size_t size = 0, a = 1, ma;

	if (id >= r->bound || depth > 16)
		return 0;
	t = &r->ids[id];
	switch (t->op) {
	case OP_TYPE_BOOL:
		size = a = 1;
		break;
	case OP_TYPE_INT:
	case OP_TYPE_FLOAT:
		size = a = t->a / 8;
		break;
	case OP_TYPE_POINTER:
		size = a = 8;
		break;
	case OP_TYPE_VECTOR: {
		size_t n = t->b == 3 ? 4 : t->b;
		size = n * type_size(r, t->a, &ma, depth + 1);
		a = size;
		break;
	}
	case OP_TYPE_ARRAY: {
		const struct id_info *len = t->b < r->bound ? &r->ids[t->b]
							   : NULL;
		if (!len || len->op != OP_CONSTANT)
			return 0;
		size = (size_t)len->a * type_size(r, t->a, &a, depth + 1);
		break;
	}
	case OP_TYPE_STRUCT:
		for (uint32_t i = 0; i < t->member_count; i++) {
			size_t ms = type_size(r, t->members[i], &ma, depth + 1);
			if (!ms)
				return 0;
			size = (size + ma - 1) / ma * ma + ms;
			if (ma > a)
				a = ma;
		}
		size = (size + a - 1) / a * a;
		break;
	default:
		return 0;
	}
	if (align)
		*align = a;
	return size;
}

static void read_string(const uint32_t *words, size_t n, char *out,
			size_t size)
{
	size_t len = strnlen((const char *)words, n * 4);

	snprintf(out, size, "%.*s", (int)len, (const char *)words);
}

static int first_pass(struct reader *r, struct spv_module *m)
{
	for (size_t at = 5; at < r->count;) {
		uint32_t op = r->words[at] & 0xffff, n = r->words[at] >> 16;
		const uint32_t *w = &r->words[at];

		if (n == 0 || at + n > r->count)
			return fail(r, "truncated instruction");
		if (op == OP_ENTRY_POINT && n >= 4 && w[1] == EXEC_MODEL_KERNEL &&
		    w[2] < r->bound) {
			struct spv_kernel *k;
			k = realloc(m->kernels,
				    (m->kernel_count + 1) * sizeof *k);
			if (!k)
				return fail(r, "out of memory");
			m->kernels = k;
			k = &m->kernels[m->kernel_count];
			memset(k, 0, sizeof *k);
			read_string(&w[3], n - 3, k->name, sizeof k->name);
			r->ids[w[2]].entry = (int)m->kernel_count++;
		} else if (op == OP_EXECUTION_MODE && n >= 6 &&
			   w[2] == EXEC_MODE_LOCAL_SIZE && w[1] < r->bound) {
			/* Entry points come first in a module: the index is
			 * known. */
			int e = r->ids[w[1]].entry;
			if (e >= 0)
				memcpy(m->kernels[e].local_size, &w[3],
				       3 * sizeof(uint32_t));
		} else if (op == OP_DECORATE && n >= 4 &&
			   w[2] == DECORATION_FUNC_PARAM_ATTR &&
			   w[3] == FUNC_PARAM_ATTR_BYVAL && w[1] < r->bound) {
			r->ids[w[1]].byval = 1;
		} else if ((op == OP_TYPE_VOID || op == OP_TYPE_BOOL) && n >= 2 &&
			   w[1] < r->bound) {
			r->ids[w[1]].op = (uint16_t)op;
		} else if ((op == OP_TYPE_INT || op == OP_TYPE_FLOAT) &&
			   n >= 3 && w[1] < r->bound) {
			r->ids[w[1]].op = (uint16_t)op;
			r->ids[w[1]].a = w[2];
		} else if ((op == OP_TYPE_VECTOR || op == OP_TYPE_ARRAY) &&
			   n >= 4 && w[1] < r->bound) {
			r->ids[w[1]].op = (uint16_t)op;
			r->ids[w[1]].a = w[2];
			r->ids[w[1]].b = w[3];
		} else if (op == OP_TYPE_STRUCT && n >= 2 && w[1] < r->bound) {
			r->ids[w[1]].op = (uint16_t)op;
			r->ids[w[1]].members = &w[2];
			r->ids[w[1]].member_count = n - 2;
		} else if (op == OP_TYPE_POINTER && n >= 4 && w[1] < r->bound) {
			r->ids[w[1]].op = (uint16_t)op;
			r->ids[w[1]].a = w[2]; /* storage class */
			r->ids[w[1]].b = w[3]; /* pointee */
		} else if (op == OP_CONSTANT && n >= 4 && w[2] < r->bound) {
			r->ids[w[2]].op = (uint16_t)op;
			r->ids[w[2]].a = w[3]; /* low word is enough here */
		}
		at += n;
	}
	return 0;
}

/* Describes parameter |id| of type |type| into |arg|. */
static void describe_param(const struct reader *r, uint32_t id, uint32_t type,
			   struct spv_arg *arg)
{
	const struct id_info *t = type < r->bound ? &r->ids[type] : NULL;

	arg->kind = SPV_ARG_OTHER;
	arg->size = 0;
	if (!t)
		return;
	if (t->op == OP_TYPE_POINTER) {
		if (r->ids[id].byval) {
			arg->kind = SPV_ARG_VALUE;
			arg->size = type_size(r, t->b, NULL, 0);
		} else if (t->a == STORAGE_CROSS_WORKGROUP) {
			arg->kind = SPV_ARG_GLOBAL;
			arg->size = 8;
		} else if (t->a == STORAGE_WORKGROUP) {
			arg->kind = SPV_ARG_LOCAL;
		}
		return;
	}
	arg->size = type_size(r, type, NULL, 0);
	if (arg->size)
		arg->kind = SPV_ARG_VALUE;
}

static int second_pass(struct reader *r, struct spv_module *m)
{
	struct spv_kernel *current = NULL;

	for (size_t at = 5; at < r->count;) {
		uint32_t op = r->words[at] & 0xffff, n = r->words[at] >> 16;
		const uint32_t *w = &r->words[at];

		if (op == OP_FUNCTION && n >= 5 && w[2] < r->bound) {
			int e = r->ids[w[2]].entry;
			current = e >= 0 ? &m->kernels[e] : NULL;
		} else if (op == OP_FUNCTION_PARAMETER && n >= 3 && current) {
			if (current->arg_count == SPV_MAX_ARGS)
				return fail(r, "a kernel with too many "
					       "parameters");
			describe_param(r, w[2], w[1],
				       &current->args[current->arg_count++]);
		} else if (op == OP_FUNCTION_END) {
			current = NULL;
		}
		at += n;
	}
	return 0;
}

int spv_parse(const void *code, size_t size, struct spv_module *out,
	      char *error, size_t error_size)
{
	struct reader r = {
		.words = code,
		.count = size / 4,
		.error = error,
		.error_size = error_size,
	};
	int result;

	memset(out, 0, sizeof *out);
	if (!code || size % 4 || r.count < 5 || r.words[0] != SPV_MAGIC)
		return fail(&r, "not a SPIR-V module (bad size or magic)");
	out->version = r.words[1];
	r.bound = r.words[3];
	if (r.bound == 0 || r.bound > (1u << 22))
		return fail(&r, "implausible id bound");
	r.ids = calloc(r.bound, sizeof *r.ids);
	if (!r.ids)
		return fail(&r, "out of memory");
	for (uint32_t i = 0; i < r.bound; i++)
		r.ids[i].entry = -1;
	result = first_pass(&r, out);
	if (result == 0)
		result = second_pass(&r, out);
	free(r.ids);
	if (result != 0)
		spv_free(out);
	return result;
}

void spv_free(struct spv_module *module)
{
	free(module->kernels);
	module->kernels = NULL;
	module->kernel_count = 0;
}

const struct spv_kernel *spv_find(const struct spv_module *module,
				  const char *name)
{
	for (uint32_t i = 0; i < module->kernel_count; i++)
		if (strcmp(module->kernels[i].name, name) == 0)
			return &module->kernels[i];
	return NULL;
}
