/* SPDX-License-Identifier: MIT */
/*
 * Bitmaps, in the two shapes framefs keeps them:
 *
 *  - in memory, an array of uint64_t words: bit i is bit i % 64 of word
 *    i / 64 (ff_bit_*).  Fast scans go a word at a time.
 *  - on disk (and in images of on-disk blocks), an array of bytes: bit i is
 *    bit i % 8 of byte i / 8 (ff_bit8_*).  Bytes have no endianness, so an
 *    on-disk bitmap reads the same on every host.
 *
 * The _atomic variants work on a byte bitmap that other threads read and
 * change concurrently (raid/intent.c): each bit is changed with one atomic
 * read-modify-write of its byte, sequentially consistent, so a set and a
 * clear of two bits in the same byte never lose one another.
 *
 * Nothing here allocates or checks bounds: the caller owns the array and
 * passes indices below its size in bits.
 */
#ifndef FF_BITMAP_H
#define FF_BITMAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Words needed for nbits bits. */
#define FF_BITMAP_WORDS(nbits) (((nbits) + 63) / 64)

static inline bool ff_bit_test(const uint64_t *map, uint64_t i)
{
	return (map[i / 64] >> (i % 64)) & 1;
}

static inline void ff_bit_set(uint64_t *map, uint64_t i)
{
	map[i / 64] |= 1ull << (i % 64);
}

static inline void ff_bit_clear(uint64_t *map, uint64_t i)
{
	map[i / 64] &= ~(1ull << (i % 64));
}

/*
 * First bit in [from, nbits) whose value is `value`; nbits if none.
 * Bits at or past nbits in the last word are never returned, whatever they
 * hold.
 */
static inline uint64_t ff_bit_find_next(const uint64_t *map, uint64_t nbits, uint64_t from,
					bool value)
{
	uint64_t flip = value ? 0 : ~0ull;

	for (uint64_t w = from / 64; w < FF_BITMAP_WORDS(nbits); w++) {
		uint64_t word = map[w] ^ flip;

		if (w == from / 64)
			word &= ~0ull << (from % 64);
		if (word) {
			uint64_t i = w * 64 + (uint64_t)__builtin_ctzll(word);

			return i < nbits ? i : nbits;
		}
	}
	return nbits;
}

static inline uint64_t ff_bit_find_next_set(const uint64_t *map, uint64_t nbits, uint64_t from)
{
	return ff_bit_find_next(map, nbits, from, true);
}

static inline uint64_t ff_bit_find_next_clear(const uint64_t *map, uint64_t nbits, uint64_t from)
{
	return ff_bit_find_next(map, nbits, from, false);
}

/* Byte bitmaps: the on-disk layout. */
static inline bool ff_bit8_test(const uint8_t *map, uint64_t i)
{
	return (map[i / 8] >> (i % 8)) & 1;
}

static inline void ff_bit8_set(uint8_t *map, uint64_t i)
{
	map[i / 8] |= (uint8_t)(1u << (i % 8));
}

static inline void ff_bit8_clear(uint8_t *map, uint64_t i)
{
	map[i / 8] &= (uint8_t)~(1u << (i % 8));
}

/* Byte bitmaps shared between threads. */
static inline bool ff_bit8_test_atomic(_Atomic uint8_t *map, uint64_t i)
{
	return (atomic_load(&map[i / 8]) >> (i % 8)) & 1;
}

static inline void ff_bit8_set_atomic(_Atomic uint8_t *map, uint64_t i)
{
	atomic_fetch_or(&map[i / 8], (uint8_t)(1u << (i % 8)));
}

static inline void ff_bit8_clear_atomic(_Atomic uint8_t *map, uint64_t i)
{
	atomic_fetch_and(&map[i / 8], (uint8_t)~(1u << (i % 8)));
}

#endif
