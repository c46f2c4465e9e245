/* SPDX-License-Identifier: MIT */
/*
 * Where frames live: DIR[/streamNN][/dNNNNN]/NAME.  One file per frame like
 * frametest, named from --name (default frame000000.tst); -d NUM puts NUM
 * files in each subdirectory; --streams N > 1 gives each stream its own
 * subdirectory.  -s puts a whole stream in one file.
 */
#ifndef FT_NAMES_H
#define FT_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define FT_NAME_DEFAULT "frame000000.tst"
#define FT_STREAM_FILE "stream.tst"

struct ft_names {
	char prefix[192];
	char suffix[64];
	uint32_t width;		/* digits of the frame number, zero-padded */
	uint64_t first;		/* the number frame 0 carries */
};

/*
 * PATTERN holds the frame number as %d / %0Nd, a run of '#', or else its last
 * run of digits, which also gives the first number ("shot.000100.dpx" numbers
 * frames 100, 101, ...).  0 or -EINVAL.
 */
int ft_names_parse(const char *pattern, struct ft_names *n);
/* Path of frame `frame` relative to its stream directory; 0 or -ENAMETOOLONG. */
int ft_frame_path(const struct ft_names *n, uint32_t files_per_dir, uint64_t frame, char *buf,
		  size_t len);
/* Subdirectory holding frame `frame` (-d), relative to the stream directory. */
int ft_subdir_path(uint32_t files_per_dir, uint64_t frame, char *buf, size_t len);
/* Stream directory relative to DIR: "." for a lone stream, else "streamNN". */
int ft_stream_dir(int own_dirs, uint32_t stream, char *buf, size_t len);

#endif
