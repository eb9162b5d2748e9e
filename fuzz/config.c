/* wafer — SPDX-License-Identifier: MIT
 *
 * fuzz/config.c: the configuration parser (lib/config.c) on any bytes,
 * strict and tolerant. Whatever it is given, a load returns a status, and
 * every value it stored reads back. */
#include "build-config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/config.h"
#include "lib/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	if (!quiet) {
		wafer__log_set_level(WAFER_LOG_ERROR);
		quiet = true;
	}
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (int tolerant = 0; tolerant < 2; tolerant++) {
		struct wafer__config *config;
		if (wafer__config_create(&config) != WAFER_OK)
			break;
		wafer__config_load_string(config, "fuzz", text, tolerant);
		const struct wafer__config_entry *entries[64];
		size_t n = wafer__config_section(config, "core", entries, 64);
		for (size_t i = 0; i < n && i < 64; i++)
			if (!wafer__config_get(config, "core", entries[i]->key, NULL))
				abort(); /* a listed key must read back */
		wafer__config_destroy(config);
	}
	free(text);
	return 0;
}
