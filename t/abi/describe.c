/* wafer — SPDX-License-Identifier: MIT
 *
 * describe.c: reads a backend's description for the plugin-ABI suite
 * (describe.h has the form). */
#include "build-config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t/abi/describe.h"

/* |in| with each ${VAR} replaced by the environment's VAR ("" if unset). */
static char *expand(const char *in)
{
	size_t cap = strlen(in) + 1, len = 0;
	char *out = malloc(cap);

	while (out && *in) {
		const char *value = NULL, *end;
		size_t n = 1;

		if (in[0] == '$' && in[1] == '{' && (end = strchr(in, '}'))) {
			char name[256];
			snprintf(name, sizeof name, "%.*s", (int)(end - in - 2),
				 in + 2);
			value = getenv(name);
			value = value ? value : "";
			n = strlen(value);
			in = end + 1;
		}
		if (len + n + 1 > cap) {
			char *grown = realloc(out, cap = 2 * (len + n + 1));
			if (!grown) {
				free(out);
				return NULL;
			}
			out = grown;
		}
		if (value) {
			memcpy(out + len, value, n);
		} else {
			out[len] = *in++;
		}
		len += n;
	}
	if (out)
		out[len] = '\0';
	return out;
}

/* Splits "WORD REST" at the first blank: *rest is REST, blanks skipped. */
static char *word(char *s, char **rest)
{
	char *end = s;

	while (*end && !isspace((unsigned char)*end))
		end++;
	*rest = end;
	if (*end) {
		*end = '\0';
		*rest = end + 1;
		while (isspace((unsigned char)**rest))
			(*rest)++;
	}
	return s;
}

static int add_pair(struct abi_pair *pairs, size_t *count, char *rest,
		    struct abi_description *d, int line, const char *what)
{
	char *value, *key = word(rest, &value);

	if (!*key || !*value) {
		snprintf(d->error, sizeof d->error,
			 "%s:%d: %s needs a name and a value", d->path, line,
			 what);
		return -1;
	}
	if (*count == ABI_MAX_OPTIONS) {
		snprintf(d->error, sizeof d->error, "%s:%d: more than %d %s",
			 d->path, line, ABI_MAX_OPTIONS, what);
		return -1;
	}
	pairs[*count].key = strdup(key);
	pairs[*count].value = expand(value);
	(*count)++;
	return 0;
}

/* The last source line read: its format a number (0x10001), its file
 * relative to the description's folder unless absolute. */
static int resolve_source(struct abi_description *d, int line)
{
	struct abi_pair *p = &d->sources[d->source_count - 1];
	const char *slash = strrchr(d->path, '/');
	char *end, *path;

	p->format = strtoul(p->key, &end, 0);
	if (*end || !p->format || !p->value || !*p->value) {
		snprintf(d->error, sizeof d->error,
			 "%s:%d: source wants a format number and a file "
			 "(source 0x10001 kernels.txt)",
			 d->path, line);
		return -1;
	}
	if (p->value[0] == '/' || !slash)
		return 0;
	path = malloc((size_t)(slash - d->path) + strlen(p->value) + 2);
	if (!path)
		return -1;
	sprintf(path, "%.*s/%s", (int)(slash - d->path), d->path, p->value);
	free(p->value);
	p->value = path;
	return 0;
}

int abi_describe_read(const char *file, struct abi_description *d)
{
	char buf[4096];
	FILE *f = fopen(file, "r");
	int line = 0, rc = 0;

	memset(d, 0, sizeof *d);
	snprintf(d->path, sizeof d->path, "%s", file);
	if (!f) {
		snprintf(d->error, sizeof d->error, "cannot read %s", file);
		return -1;
	}
	while (rc == 0 && fgets(buf, sizeof buf, f)) {
		char *s = buf, *rest, *directive;
		size_t n;

		line++;
		if (strchr(s, '#'))
			*strchr(s, '#') = '\0';
		for (n = strlen(s); n && isspace((unsigned char)s[n - 1]); n--)
			s[n - 1] = '\0';
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			continue;
		directive = word(s, &rest);
		if (strcmp(directive, "plugin") == 0 && *rest) {
			free(d->plugin);
	free(d->version);
			d->plugin = expand(rest);
		} else if (strcmp(directive, "version") == 0 && *rest) {
			free(d->version);
			d->version = expand(rest);
		} else if (strcmp(directive, "offers") == 0) {
			size_t used = strlen(d->offers);
			snprintf(d->offers + used, sizeof d->offers - used,
				 "%s%s ", used ? "" : " ", rest);
		} else if (strcmp(directive, "option") == 0) {
			rc = add_pair(d->options, &d->option_count, rest, d,
				      line, "option");
		} else if (strcmp(directive, "env") == 0) {
			rc = add_pair(d->env, &d->env_count, rest, d, line,
				      "env");
		} else if (strcmp(directive, "unsupported") == 0) {
			rc = add_pair(d->unsupported, &d->unsupported_count,
				      rest, d, line, "unsupported");
		} else if (strcmp(directive, "source") == 0) {
			rc = add_pair(d->sources, &d->source_count, rest, d,
				      line, "source");
			if (rc == 0)
				rc = resolve_source(d, line);
		} else {
			snprintf(d->error, sizeof d->error,
				 "%s:%d: unknown directive '%s' (plugin, "
				 "version, offers, option, env, unsupported, "
				 "source)",
				 file, line, directive);
			rc = -1;
		}
	}
	fclose(f);
	if (rc == 0 && !d->plugin) {
		snprintf(d->error, sizeof d->error,
			 "%s: no 'plugin NAME' line", file);
		rc = -1;
	}
	return rc;
}

int abi_plugin_path(struct abi_description *d, char *out, size_t size)
{
	const char *env = getenv("WAFER_PLUGIN_PATH");
	char *dirs, *dir, *save = NULL;

	if (strchr(d->plugin, '/')) {
		snprintf(out, size, "%s", d->plugin);
		return 0;
	}
	dirs = malloc(strlen(env ? env : "") + strlen(WAFER_PLUGINDIR) + 2);
	if (!dirs)
		return -1;
	sprintf(dirs, "%s%s%s", env ? env : "", env ? ":" : "",
		WAFER_PLUGINDIR);
	for (dir = strtok_r(dirs, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, size, "%s/%s.so", dir, d->plugin);
		if (access(out, R_OK) == 0) {
			free(dirs);
			return 0;
		}
	}
	free(dirs);
	snprintf(d->error, sizeof d->error,
		 "%s.so is neither on WAFER_PLUGIN_PATH nor in %s (not built?)",
		 d->plugin, WAFER_PLUGINDIR);
	return -1;
}

const char *abi_unsupported(const struct abi_description *d,
			    const char *name)
{
	for (size_t i = 0; i < d->unsupported_count; i++)
		if (strcmp(d->unsupported[i].key, name) == 0)
			return d->unsupported[i].value;
	return NULL;
}

int abi_offers(const struct abi_description *d, const char *name)
{
	char word[128];

	snprintf(word, sizeof word, " %s ", name);
	return strstr(d->offers, word) != NULL;
}

static void free_pairs(struct abi_pair *pairs, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(pairs[i].key);
		free(pairs[i].value);
	}
}

void abi_describe_free(struct abi_description *d)
{
	free(d->plugin);
	free(d->version);
	free_pairs(d->options, d->option_count);
	free_pairs(d->env, d->env_count);
	free_pairs(d->unsupported, d->unsupported_count);
	free_pairs(d->sources, d->source_count);
}

const char *abi_source(const struct abi_description *d,
		       unsigned long format)
{
	for (size_t i = 0; i < d->source_count; i++)
		if (d->sources[i].format == format)
			return d->sources[i].value;
	return NULL;
}
