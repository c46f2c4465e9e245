/* SPDX-License-Identifier: MIT */
/*
 * The bucket of a 64-bit key (a block, stripe or inode number) in a hash
 * table of a power-of-two size, for every cache that keeps one.
 *
 * Fibonacci hashing: the key times 2^64 / phi, bits 32 and up of the
 * product, masked.  Keys that count up one by one, as block and stripe
 * numbers do, land far apart.  Nothing here allocates.
 */
#ifndef FF_HASH_H
#define FF_HASH_H

#include <stdint.h>

/* Bucket of key among mask + 1 buckets (mask + 1 a power of two). */
static inline uint32_t ff_hash_bucket(uint64_t key, uint32_t mask)
{
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

#endif
