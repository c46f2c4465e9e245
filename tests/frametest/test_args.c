/* SPDX-License-Identifier: MIT */
/* frametest's command line: attached and separate forms, -r's optional size, errors. */
#include <errno.h>
#include <string.h>

#include "args.h"
#include "check_main.h"

#define ARGV_MAX 64

static char line_bufs[2][1024];	/* the config points into the last two lines parsed */
static unsigned line_next;
static char err[512];

/* Split a command line at spaces; argv[0] is the program. */
static int parse(const char *line, struct ft_config *c)
{
	char *argv[ARGV_MAX] = { "framefs-frametest" };
	char *line_buf = line_bufs[line_next++ % 2];
	int argc = 1;

	snprintf(line_buf, sizeof(line_bufs[0]), "%s", line);
	for (char *t = strtok(line_buf, " "); t && argc < ARGV_MAX; t = strtok(NULL, " "))
		argv[argc++] = t;
	return ft_args_parse(argc, argv, c, err, sizeof(err));
}

/* The fields a run depends on. */
static void assert_same(const struct ft_config *a, const struct ft_config *b)
{
	ck_assert_int_eq(a->mode, b->mode);
	ck_assert_uint_eq(a->frame_bytes, b->frame_bytes);
	ck_assert_uint_eq(a->frames, b->frames);
	ck_assert_uint_eq(a->threads, b->threads);
	ck_assert_uint_eq(a->fps_num, b->fps_num);
	ck_assert_uint_eq(a->fps_den, b->fps_den);
	ck_assert_uint_eq(a->queue_max, b->queue_max);
	ck_assert_uint_eq(a->prebuffer, b->prebuffer);
	ck_assert_uint_eq(a->loops, b->loops);
	ck_assert_uint_eq(a->ios_per_frame, b->ios_per_frame);
	ck_assert_uint_eq(a->files_per_dir, b->files_per_dir);
	ck_assert_uint_eq(a->crop_pct, b->crop_pct);
	ck_assert_int_eq(a->order, b->order);
	ck_assert(a->pause_s == b->pause_s && a->update_s == b->update_s);
	ck_assert(a->hist_window_s == b->hist_window_s);
	ck_assert_str_eq(a->dir, b->dir);
	ck_assert_str_eq(a->params, b->params);
	ck_assert_uint_eq(a->vary.min, b->vary.min);
	ck_assert_uint_eq(a->vary.max, b->vary.max);
	ck_assert_uint_eq(a->vary.seed, b->vary.seed);
	ck_assert_uint_eq(a->io_size, b->io_size);
}

static const char *const pairs[][2] = {
	{ "-w4k -n1800 -t4 -f24 -q3 -b2 /d", "-w 4k -n 1800 -t 4 -f 24 -q 3 -b 2 /d" },
	{ "-r4k -l3 -i4 -d100 -c50 /d", "-r 4k -l 3 -i 4 -d 100 -c 50 /d" },
	{ "-w1 -z40000 -p1.5 -u2 -h10 -m /d", "-w 1 -z 40000 -p 1.5 -u 2 -h 10 -m /d" },
	{ "-r -f24000/1001 -v -x/tmp/x.csv /d", "-r -f 24000/1001 -v -x /tmp/x.csv /d" },
	{ "--header=32 --name=a.####.dpx -w2k /d", "--header 32 --name a.####.dpx -w 2k /d" },
	{ "--streams=3 -w hd /d", "--streams 3 -w hd /d" },
	{ "-w --vary=3M:60M,5 --io-size=1M -s /d", "-w --vary 3M:60M,5 --io-size 1M -s /d" },
	{ "-r --io-size=256K -s /d", "-r -s --io-size 256KiB /d" },
};

START_TEST(attached_and_separate_forms_agree)
{
	struct ft_config a, b;

	ck_assert_int_eq(parse(pairs[_i][0], &a), 0);
	ck_assert_int_eq(parse(pairs[_i][1], &b), 0);
	assert_same(&a, &b);
}
END_TEST

START_TEST(defaults_are_frametests)
{
	struct ft_config c;

	ck_assert_int_eq(parse("/d", &c), 0);
	ck_assert_int_eq(c.mode, FT_MODE_READ);
	ck_assert_uint_eq(c.frames, 1800);
	ck_assert_uint_eq(c.prebuffer, 5);
	ck_assert_uint_eq(c.header_kib, 64);
	ck_assert_uint_eq(c.threads, 1);
	ck_assert_uint_eq(c.ios_per_frame, 1);
	ck_assert_uint_eq(c.frame_bytes, 0);
	ck_assert_uint_eq(c.fps_num, 0);
	ck_assert_str_eq(c.dir, "/d");
}
END_TEST

START_TEST(z_overrides_the_w_size)
{
	struct ft_config c;

	ck_assert_int_eq(parse("-w 1 -z 40000 -n 3000 -t 4 /d", &c), 0);
	ck_assert_int_eq(c.mode, FT_MODE_WRITE);
	ck_assert_uint_eq(c.frame_bytes, 40000ull * 1024);
	ck_assert_str_eq(c.size_label, "40000KiB");
	ck_assert_str_eq(c.params, "-w40000 -n3000 -t4");
}
END_TEST

START_TEST(r_takes_a_size_only_when_one_follows)
{
	struct ft_config c;

	ck_assert_int_eq(parse("-r /d", &c), 0);
	ck_assert_uint_eq(c.frame_bytes, 0);
	ck_assert_str_eq(c.dir, "/d");
	ck_assert_int_eq(parse("-r 4k /d", &c), 0);
	ck_assert_uint_eq(c.frame_bytes, 51052544);
	ck_assert_int_eq(parse("-r 100 -n 5 /d", &c), 0);
	ck_assert_uint_eq(c.frame_bytes, 102400);
	ck_assert_int_eq(parse("-r -n 5 /d", &c), 0);
	ck_assert_uint_eq(c.frame_bytes, 0);
	ck_assert_uint_eq(c.frames, 5);
	ck_assert_int_eq(parse("-n 5 -r 2k", &c), 0);	/* "2k" is the directory here */
	ck_assert_str_eq(c.dir, "2k");
	ck_assert_uint_eq(c.frame_bytes, 0);
}
END_TEST

START_TEST(header_applies_wherever_it_is_given)
{
	struct ft_config a, b;

	ck_assert_int_eq(parse("--header=32 -w 4k /d", &a), 0);
	ck_assert_int_eq(parse("-w 4k --header=32 /d", &b), 0);
	ck_assert_uint_eq(a.frame_bytes, 4096ull * 3112 * 4 + 32768);
	ck_assert_uint_eq(b.frame_bytes, a.frame_bytes);
}
END_TEST

START_TEST(frame_rates_are_rational)
{
	uint64_t n, d;
	char buf[32];

	ck_assert_int_eq(ft_parse_fps("24000/1001", &n, &d), 0);
	ck_assert_uint_eq(n, 24000);
	ck_assert_uint_eq(d, 1001);
	ck_assert_str_eq(ft_format_fps(n, d, buf, sizeof(buf)), "23.976");
	ck_assert_int_eq(ft_parse_fps("23.976", &n, &d), 0);
	ck_assert_uint_eq(n, 2997);
	ck_assert_uint_eq(d, 125);
	ck_assert_int_eq(ft_parse_fps("30000/1001", &n, &d), 0);
	ck_assert_str_eq(ft_format_fps(n, d, buf, sizeof(buf)), "29.97");
	ck_assert_int_eq(ft_parse_fps("48/2", &n, &d), 0);
	ck_assert_str_eq(ft_format_fps(n, d, buf, sizeof(buf)), "24");
	ck_assert_int_eq(ft_parse_fps("0", &n, &d), -EINVAL);
	ck_assert_int_eq(ft_parse_fps("24/0", &n, &d), -EINVAL);
	ck_assert_int_eq(ft_parse_fps("abc", &n, &d), -EINVAL);
	ck_assert_int_eq(ft_parse_fps("24fps", &n, &d), -EINVAL);
	ck_assert_int_eq(ft_parse_fps("20000", &n, &d), -EINVAL);
}
END_TEST

START_TEST(flags_mean_what_frametest_means)
{
	struct ft_config c;

	ck_assert_int_eq(parse("-h 5 /d", &c), 0);	/* histogram window, not help */
	ck_assert(!c.help);
	ck_assert(c.hist_window_s == 5.0);
	ck_assert_int_eq(parse("-vs -w 1 /d", &c), 0);	/* bundled flags */
	ck_assert_int_eq(c.order, FT_ORDER_REVERSE);
	ck_assert(c.single_file);
	ck_assert_int_eq(parse("-e -w -n 3 /d", &c), 0);	/* -e needs no size */
	ck_assert(c.empty);
	ck_assert_int_eq(c.mode, FT_MODE_WRITE);
	ck_assert_str_eq(c.size_label, "empty");
	ck_assert_int_eq(parse("-f 24 --max-streams=4 -w 4k /d", &c), 0);
	ck_assert_uint_eq(c.max_streams, 4);
	ck_assert_int_eq(parse("-f 24 --max-streams -w 4k /d", &c), 0);
	ck_assert_uint_eq(c.max_streams, 32);
	ck_assert_int_eq(parse("--json=/tmp/x.json /d", &c), 0);
	ck_assert(!c.json);
	ck_assert_str_eq(c.json_path, "/tmp/x.json");
}
END_TEST

START_TEST(vary_and_io_size_are_understood)
{
	struct ft_config c;

	ck_assert_int_eq(parse("-w --vary=3M:60M -n 40 -s /d", &c), 0);
	ck_assert_int_eq(c.mode, FT_MODE_WRITE);
	ck_assert_uint_eq(c.vary.min, 3u << 20);
	ck_assert_uint_eq(c.vary.max, 60u << 20);
	ck_assert_uint_eq(c.vary.seed, FT_VARY_SEED_DEFAULT);
	ck_assert_uint_eq(c.frame_bytes, 0);
	ck_assert_str_eq(c.size_label, "3MiB-60MiB");
	ck_assert_str_eq(c.params, "-w -n40 -t1 -s --vary=3MiB:60MiB,1");
	ck_assert_str_eq(c.dir, "/d");
	ck_assert_int_eq(parse("-r --vary=256K:4M,9 -n 5 /d", &c), 0);
	ck_assert_int_eq(c.mode, FT_MODE_READ);
	ck_assert_uint_eq(c.vary.seed, 9);
	ck_assert_int_eq(parse("-r -s --io-size=1M /d", &c), 0);
	ck_assert_uint_eq(c.io_size, 1u << 20);
	ck_assert_str_eq(c.params, "-r -n1800 -t1 -s --io-size=1MiB");
	ck_assert_int_eq(parse("-w 4k --io-size 256 --streams 2 /d", &c), 0);	/* bare: KiB */
	ck_assert_uint_eq(c.io_size, 256u << 10);
	ck_assert_uint_eq(c.frame_bytes, 51052544);
	ck_assert(!ft_vary_on(&c.vary));
	ck_assert_int_eq(parse("-w --vary=1M:2M -f 24 --max-streams=3 /d", &c), 0);
}
END_TEST

START_TEST(no_arguments_means_help)
{
	struct ft_config c;
	char *argv[] = { "framefs-frametest", NULL };

	ck_assert_int_eq(ft_args_parse(1, argv, &c, err, sizeof(err)), 0);
	ck_assert(c.help);
	ck_assert_int_eq(parse("--list", &c), 0);
	ck_assert(c.list);
}
END_TEST

static const char *const bad[] = {
	"-n abc /d", "-n 0 /d", "-n", "-q 0 /d", "-t 999 /d", "-f 0 /d", "-c 0 /d",
	"-Q 9 /d", "--nope /d", "-w 4k -r /d", "-w bogus /d", "-w /d", "-w 4k",
	"-f 24 --max-streams=0 -w 4k /d", "--max-streams -w 4k /d", "/d /e",
	"-w 4k -c 50 /d", "-s -d 5 -w 1 /d", "--streams 2 --max-streams -f 24 /d",
	"--name=nonumber -w 1 /d", "--name=a/%d -w 1 /d", "--name=%d%d -w 1 /d",
	"--header=99999999 /d", "-p -1 /d", "-u nan /d", "-w 1 -z 0 /d", "--list=3",
	"--json --json=/tmp/x /d", "-n 20000000 -l 2 /d", "-t 256 --streams 5 /d", "-",
	"-w 4k --vary=3M:60M /d", "-w 1 -z 64 --vary=3M:60M /d", "-r 4k --vary=1M:2M /d",
	"-e -w --vary=1M:2M /d", "--vary=1M /d", "-w --vary=60M:3M /d", "-w --vary=3M:60M,x /d",
	"-w --vary /d", "--io-size=1000B -w 4k /d", "--io-size=0 -w 4k /d",
	"-i 4 --io-size=1M -w 4k /d", "-e -w --io-size=1M /d", "--io-size=8G -w 4k /d",
	"--io-size /d", "-w /d --vary",
};

START_TEST(bad_input_gives_one_line_error)
{
	struct ft_config c;

	ck_assert_msg(parse(bad[_i], &c) == -EINVAL, "accepted: %s", bad[_i]);
	ck_assert_msg(err[0] != '\0', "no message for: %s", bad[_i]);
	ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
}
END_TEST

static Suite *args_suite(void)
{
	Suite *s = suite_create("args");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, attached_and_separate_forms_agree, 0,
			    (int)(sizeof(pairs) / sizeof(pairs[0])));
	tcase_add_test(tc, defaults_are_frametests);
	tcase_add_test(tc, z_overrides_the_w_size);
	tcase_add_test(tc, r_takes_a_size_only_when_one_follows);
	tcase_add_test(tc, header_applies_wherever_it_is_given);
	tcase_add_test(tc, frame_rates_are_rational);
	tcase_add_test(tc, flags_mean_what_frametest_means);
	tcase_add_test(tc, vary_and_io_size_are_understood);
	tcase_add_test(tc, no_arguments_means_help);
	tcase_add_loop_test(tc, bad_input_gives_one_line_error, 0,
			    (int)(sizeof(bad) / sizeof(bad[0])));
	suite_add_tcase(s, tc);
	return s;
}

FT_CHECK_MAIN(args_suite)
