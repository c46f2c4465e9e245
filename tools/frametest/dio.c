/* SPDX-License-Identifier: MIT */
/*
 * Kept apart because glibc 2.36's struct statx predates the DIO alignment
 * fields: this file uses the kernel's struct and the raw system call, and
 * must not include <sys/stat.h>.
 */
#include "dio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int ft_dio_align(int fd, uint32_t *offset_align, uint32_t *mem_align)
{
	struct statx stx;

	memset(&stx, 0, sizeof(stx));
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) != 0)
		return -errno;
	if (!(stx.stx_mask & STATX_DIOALIGN) || stx.stx_dio_offset_align == 0)
		return -EOPNOTSUPP;
	*offset_align = stx.stx_dio_offset_align;
	*mem_align = stx.stx_dio_mem_align;
	return 0;
}
