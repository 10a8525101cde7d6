/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The answers of `get` kept between requests (get-cache.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "get-cache.h"

struct entry {
	char *id, *org, *project, *body;
	size_t body_len;
	uint64_t changes;
};

struct op_get_cache {
	struct entry slot[OP_GET_CACHE_SLOTS];
};

/* FNV-1a of the id: ids are random, any spread will do. */
static struct entry *slot_of(const struct op_get_cache *c, const char *id)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *s = (const unsigned char *)id; *s; s++)
		h = (h ^ *s) * 16777619u;
	return (struct entry *)&c->slot[h % OP_GET_CACHE_SLOTS];
}

static void entry_clear(struct entry *e)
{
	free(e->id);
	free(e->org);
	free(e->project);
	free(e->body);
	memset(e, 0, sizeof(*e));
}

int op_get_cache_new(struct op_get_cache **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void op_get_cache_free(struct op_get_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < OP_GET_CACHE_SLOTS; i++)
		entry_clear(&c->slot[i]);
	free(c);
}

bool op_get_cache_find(const struct op_get_cache *c, const char *id, uint64_t changes, struct op_get_hit *ret)
{
	const struct entry *e = c ? slot_of(c, id) : NULL;

	if (!e || !e->body || e->changes != changes || strcmp(e->id, id) != 0)
		return false;
	*ret = (struct op_get_hit){ .org = e->org, .project = e->project, .body = e->body, .body_len = e->body_len };
	return true;
}

int op_get_cache_put(struct op_get_cache *c, const char *id, uint64_t changes, const char *org, const char *project,
		     const char *body, size_t body_len)
{
	struct entry *e;

	if (!c)
		return 0;
	e = slot_of(c, id);
	entry_clear(e);
	e->id = strdup(id);
	e->org = strdup(org);
	e->project = strdup(project);
	e->body = malloc(body_len + 1);
	if (!e->id || !e->org || !e->project || !e->body) {
		entry_clear(e);
		return -ENOMEM;
	}
	memcpy(e->body, body, body_len);
	e->body[body_len] = '\0';
	e->body_len = body_len;
	e->changes = changes;
	return 0;
}
