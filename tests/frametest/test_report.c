/* SPDX-License-Identifier: MIT */
/*
 * From records to figures and text: percentiles, histogram buckets, windows,
 * per-stream judgement, the PASS|FAIL line, the JSON document, the CSV, and
 * frame file names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "names.h"
#include "report.h"
#include "stats.h"

#define MS 1000000ull

START_TEST(percentiles_are_nearest_rank)
{
	double v[1000];

	for (int i = 0; i < 1000; i++)
		v[i] = i + 1;
	ck_assert(ft_percentile(v, 1000, 50) == 500);
	ck_assert(ft_percentile(v, 1000, 90) == 900);
	ck_assert(ft_percentile(v, 1000, 99) == 990);
	ck_assert(ft_percentile(v, 1000, 99.9) == 999);
	ck_assert(ft_percentile(v, 1000, 100) == 1000);
	ck_assert(ft_percentile(v, 1, 99.9) == 1);
	ck_assert(ft_percentile(v, 0, 50) == 0);
}
END_TEST

START_TEST(histogram_buckets_are_frametests)
{
	ck_assert_int_eq(ft_hist_bucket(0.05), 0);
	ck_assert_int_eq(ft_hist_bucket(0.1), 1);
	ck_assert_int_eq(ft_hist_bucket(0.15), 1);
	ck_assert_int_eq(ft_hist_bucket(4.9), 5);
	ck_assert_int_eq(ft_hist_bucket(999), 12);
	ck_assert_int_eq(ft_hist_bucket(1000), 13);
	ck_assert_int_eq(ft_hist_bucket(1e9), 13);
	ck_assert_str_eq(ft_hist_labels[0], "<0.1");
	ck_assert_str_eq(ft_hist_labels[FT_HIST_BUCKETS - 1], ">1s");
}
END_TEST

/* Two streams of 50 frames at 25 fps: stream 0 clean, stream 1 with 3 late reads. */
static struct ft_rec r0[50], r1[50];
static const struct ft_rec *const both[2] = { r0, r1 };

static void make_records(void)
{
	for (uint64_t k = 0; k < 50; k++) {
		struct ft_rec r = { .frame = k, .start_ns = k * 40 * MS, .open_ns = MS / 10,
				    .io_ns = 10 * MS, .close_ns = MS / 20, .bytes = 1000000,
				    .status = FT_ST_OK, .verify = FT_V_OK };

		r.done_ns = r.start_ns + 10 * MS + MS / 10 + MS / 20;
		r0[k] = r1[k] = r;
	}
	for (uint64_t k = 20; k < 23; k++) {
		r1[k].status = FT_ST_LATE;
		r1[k].io_ns = 300 * MS;
		r1[k].done_ns = r1[k].start_ns + 300 * MS;
	}
}

static struct ft_stats_in stats_in(uint32_t nstreams)
{
	return (struct ft_stats_in){
		.recs = both, .nstreams = nstreams, .positions = 50, .write = false,
		.verify = true, .pace = { 25, 1, 5 },
		.duration_ns = 2000 * MS,
	};
}

START_TEST(streams_are_judged_on_their_own)
{
	struct ft_stats_in in;
	struct ft_summary s;

	make_records();
	in = stats_in(2);
	ck_assert_int_eq(ft_summarize(&in, &s), 0);
	ck_assert(s.streams[0].pass);
	ck_assert(!s.streams[1].pass);
	ck_assert(!s.pass);
	ck_assert_uint_eq(s.streams_passed, 1);
	ck_assert_uint_eq(s.drops.dropped, 3);
	ck_assert_uint_eq(s.drops.late, 3);
	ck_assert_uint_eq(s.streams[1].drops.longest_drop_run, 3);
	ck_assert_uint_eq(s.drops.transferred, 100);
	ck_assert(s.streams[0].lowest_fps == 25);
	ck_assert(s.streams[1].lowest_fps == 22);
	ck_assert(s.lowest_fps == 22);
	ck_assert(s.fps == 50);		/* 100 frames in 2 s */
	ck_assert(s.mb_s == 50);		/* 1 MB frames */
	ck_assert(s.frame.max > 299 && s.frame.p50 < 11);
	ck_assert_uint_eq(s.hist[ft_hist_bucket(10.15)] + s.hist[ft_hist_bucket(300.15)], 100);
	ck_assert_uint_eq(s.win[0].frames, 25 + 28);	/* done in the last 1 s: 25, and 3 late ones */
	ft_summary_free(&s);
}
END_TEST

static char *render(const struct ft_report *r, bool json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (json)
		ft_report_json(f, r);
	else
		ft_report_text(f, r);
	fclose(f);
	return text;
}

/* Brackets balance outside strings, and strings close: enough to know it parses. */
static void assert_json_shape(const char *j)
{
	int depth = 0;
	bool in_str = false;

	ck_assert(j[0] == '{');
	for (const char *p = j; *p; p++) {
		if (in_str) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"')
			in_str = true;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			depth--;
		ck_assert_int_ge(depth, 0);
		ck_assert_msg(strncmp(p, "nan", 3) && strncmp(p, "inf", 3), "non-JSON number");
	}
	ck_assert(!in_str);
	ck_assert_int_eq(depth, 0);
}

START_TEST(json_and_verdict_say_the_same)
{
	struct ft_config c;
	struct ft_stats_in in;
	struct ft_summary s;
	struct ft_report r;
	char verdict[256], *j, *t;

	make_records();
	ft_config_defaults(&c);
	c.dir = "/mnt/\"odd\\dir\"\n";
	c.fps_num = 25;
	c.streams = 2;
	in = stats_in(2);
	ck_assert_int_eq(ft_summarize(&in, &s), 0);
	r = (struct ft_report){ .cfg = &c, .sum = &s, .frame_bytes = 1000448,
				.io_bytes = 1000000, .size_label = "hd", .verify = true };
	ft_verdict(&r, verdict, sizeof(verdict));
	ck_assert_str_eq(verdict, "FAIL: 2 stream(s) of hd at 25 fps: dropped 3, verified 100/100 frames");
	j = render(&r, true);
	assert_json_shape(j);
	ck_assert_ptr_nonnull(strstr(j, "\"pass\":false"));
	ck_assert_ptr_nonnull(strstr(j, "\"directory\":\"/mnt/\\\"odd\\\\dir\\\"\\n\""));
	ck_assert_ptr_nonnull(strstr(j, "\"verdict\":\"FAIL: 2 stream(s)"));
	ck_assert_ptr_nonnull(strstr(j, "\"lowest_fps_1s\":22"));
	ck_assert_ptr_nonnull(strstr(j, "\"max_streams\":null"));
	ck_assert_ptr_nonnull(strstr(j, "\"p99_9\":"));
	t = render(&r, false);
	ck_assert_ptr_nonnull(strstr(t, "Averaged details:"));
	ck_assert_ptr_nonnull(strstr(t, "Histogram of frame completion times"));
	/* The verdict is the last line. */
	ck_assert_int_eq(strncmp(t + strlen(t) - strlen(verdict) - 1, verdict, strlen(verdict)), 0);
	ck_assert_str_eq(t + strlen(t) - 1, "\n");
	free(j);
	free(t);
	ft_summary_free(&s);
}
END_TEST

START_TEST(short_runs_have_no_lowest_fps)
{
	struct ft_config c;
	struct ft_stats_in in;
	struct ft_summary s;
	struct ft_report r;
	char verdict[256], *j;

	make_records();
	ft_config_defaults(&c);
	c.dir = "/d";
	c.mode = FT_MODE_WRITE;
	c.fps_num = 25;
	in = stats_in(1);
	in.positions = 10;	/* 10 frames: 0.4 s of schedule */
	in.write = true;
	in.verify = false;
	ck_assert_int_eq(ft_summarize(&in, &s), 0);
	ck_assert(s.lowest_fps < 0);
	r = (struct ft_report){ .cfg = &c, .sum = &s, .size_label = "4k", .write = true };
	j = render(&r, true);
	ck_assert_ptr_nonnull(strstr(j, "\"lowest_fps_1s\":null"));
	ck_assert_ptr_nonnull(strstr(j, "\"pass\":true"));
	ft_verdict(&r, verdict, sizeof(verdict));
	ck_assert_str_eq(verdict, "PASS: 1 stream(s) of 4k at 25 fps: dropped 0, verified 0/0 frames");
	free(j);
	ft_summary_free(&s);
}
END_TEST

START_TEST(csv_has_a_line_per_frame)
{
	struct ft_config c;
	struct ft_stream st;
	struct ft_run run;
	char *text = NULL;
	size_t len = 0, lines = 0;
	FILE *f = open_memstream(&text, &len);

	make_records();
	ft_config_defaults(&c);
	memset(&st, 0, sizeof(st));
	memset(&run, 0, sizeof(run));
	st.recs = r1;
	run.cfg = &c;
	run.nstreams = 1;
	run.positions = 50;
	run.streams = &st;
	run.pace = (struct ft_pace){ 25, 1, 5 };
	ck_assert_int_eq(ft_write_csv(f, &run), 0);
	fclose(f);
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	ck_assert_uint_eq(lines, 51);
	ck_assert_ptr_nonnull(strstr(text, "0,20,20,late,"));
	free(text);
}
END_TEST

static void assert_name(const char *pattern, uint32_t per_dir, uint64_t frame, const char *want)
{
	struct ft_names n;
	char buf[256];

	ck_assert_int_eq(ft_names_parse(pattern, &n), 0);
	ck_assert_int_eq(ft_frame_path(&n, per_dir, frame, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, want);
}

START_TEST(frame_names_follow_the_pattern)
{
	struct ft_names n;

	assert_name("frame000000.tst", 0, 12, "frame000012.tst");
	assert_name("shot.000100.dpx", 0, 5, "shot.000105.dpx");
	assert_name("%04d.exr", 0, 7, "0007.exr");
	assert_name("a####b", 0, 12, "a0012b");
	assert_name("frame000000.tst", 10, 12, "d00001/frame000012.tst");
	assert_name("f%d", 0, 123456, "f123456");
	ck_assert_int_ne(ft_names_parse("noframe", &n), 0);
	ck_assert_int_ne(ft_names_parse("a/%d", &n), 0);
	ck_assert_int_ne(ft_names_parse("%d%d", &n), 0);
	ck_assert_int_ne(ft_names_parse("%s", &n), 0);
	ck_assert_int_ne(ft_names_parse("", &n), 0);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("figures");

	tcase_add_test(tc, percentiles_are_nearest_rank);
	tcase_add_test(tc, histogram_buckets_are_frametests);
	tcase_add_test(tc, streams_are_judged_on_their_own);
	tcase_add_test(tc, json_and_verdict_say_the_same);
	tcase_add_test(tc, short_runs_have_no_lowest_fps);
	tcase_add_test(tc, csv_has_a_line_per_frame);
	tcase_add_test(tc, frame_names_follow_the_pattern);
	suite_add_tcase(s, tc);
	return s;
}

FT_CHECK_MAIN(report_suite)
