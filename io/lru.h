/* SPDX-License-Identifier: MIT */
/*
 * An intrusive least-recently-used list: the node lives in the cached entry
 * (struct ff_lru_node inside it), the list is a sentinel, and every
 * operation is O(1) and allocates nothing.
 *
 *  - ff_lru_touch makes an entry the most recently used, whether it was on
 *    the list or not;
 *  - ff_lru_oldest and ff_lru_newer walk from the least recently used end,
 *    which is where eviction looks first;
 *  - ff_lru_remove takes an entry off (nothing if it is not on).
 *
 * A node that is all zero (a calloc'ed or memset entry) is off the list.
 * No locking: the cache that owns the list guards it.
 */
#ifndef FF_LRU_H
#define FF_LRU_H

#include <stdbool.h>
#include <stddef.h>

struct ff_lru_node {
	struct ff_lru_node *prev, *next; /* both NULL: not on a list */
};

struct ff_lru {
	struct ff_lru_node head; /* head.next: the oldest; head.prev: the newest */
};

/* The entry of type `type` whose member `member` is node. */
#define FF_LRU_ENTRY(node, type, member) ((type *)((char *)(node) - offsetof(type, member)))

static inline void ff_lru_init(struct ff_lru *l)
{
	l->head.prev = l->head.next = &l->head;
}

static inline bool ff_lru_linked(const struct ff_lru_node *n)
{
	return n->next != NULL;
}

static inline void ff_lru_remove(struct ff_lru_node *n)
{
	if (!ff_lru_linked(n))
		return;
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = NULL;
}

static inline void ff_lru_touch(struct ff_lru *l, struct ff_lru_node *n)
{
	ff_lru_remove(n);
	n->prev = l->head.prev;
	n->next = &l->head;
	l->head.prev->next = n;
	l->head.prev = n;
}

/* The least recently used node; NULL when the list is empty. */
static inline struct ff_lru_node *ff_lru_oldest(const struct ff_lru *l)
{
	return l->head.next == &l->head ? NULL : l->head.next;
}

/* The node used next after n (n on l); NULL when n is the newest.  Read it
 * before n is removed to walk on past a node taken off. */
static inline struct ff_lru_node *ff_lru_newer(const struct ff_lru *l, const struct ff_lru_node *n)
{
	return n->next == &l->head ? NULL : n->next;
}

#endif
