/* SPDX-License-Identifier: MIT */
/* O_DIRECT alignment of an open file, from statx(STATX_DIOALIGN). */
#ifndef FT_DIO_H
#define FT_DIO_H

#include <stdint.h>

/*
 * 0 with the file-offset and memory alignments direct I/O needs, or -errno.
 * -EOPNOTSUPP when the kernel or filesystem does not say (the caller then
 * assumes 4 KiB, which every device we know accepts).
 */
int ft_dio_align(int fd, uint32_t *offset_align, uint32_t *mem_align);

#endif
