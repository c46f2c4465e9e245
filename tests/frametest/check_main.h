/* SPDX-License-Identifier: MIT */
/* One main for every frametest unit test program: run the suite, exit 0 or 1. */
#ifndef FT_CHECK_MAIN_H
#define FT_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

#define FT_CHECK_MAIN(make_suite)                                                       \
	int main(void)                                                                   \
	{                                                                                \
		SRunner *sr = srunner_create(make_suite());                              \
		int failed;                                                              \
		srunner_run_all(sr, CK_NORMAL);                                          \
		failed = srunner_ntests_failed(sr);                                      \
		srunner_free(sr);                                                        \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS;                             \
	}

#endif
