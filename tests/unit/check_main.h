/* Each tests/unit/test_<module>.c defines make_suite(); check_main.c runs it. */
#ifndef ACCELD_CHECK_MAIN_H
#define ACCELD_CHECK_MAIN_H

#include <check.h>

Suite *make_suite(void);

#endif
