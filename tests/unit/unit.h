/* The unit-test suites, one per engine file, gathered by main.c. */
#ifndef FASTTIME_TESTS_UNIT_H
#define FASTTIME_TESTS_UNIT_H

#include <check.h>

Suite *suite_calib(void);
Suite *suite_histogram(void);
Suite *suite_settings(void);
Suite *suite_table(void);
Suite *suite_clock(void);
Suite *suite_clock_table(void);
Suite *suite_refresh(void);
Suite *suite_cpu(void);
Suite *suite_evidence(void);
Suite *suite_watch(void);
Suite *suite_service_page(void);
Suite *suite_service_notify(void);
Suite *suite_stale_checks(void);
Suite *suite_preload_clamp(void);

#endif
