/* Unit tests for err.c: every error code maps to a reason with its status and a phrase; a refusal says why. */
#include <string.h>

#include "check_main.h"
#include "core/err.h"
#include "core/reason.h"

START_TEST(every_error_code_maps_to_a_reason_with_its_status)
{
	ck_assert_int_eq(acceld_err_http(ACCELD_OK), 200);
	for (int e = ACCELD_EINVAL; e < ACCELD_ERR_COUNT; e++) {
		enum reason r = acceld_err_to_reason((enum acceld_err)e);

		ck_assert_int_ne(r, REASON_INTERNAL);
		ck_assert_int_eq(acceld_err_http((enum acceld_err)e), reason_status(r));
		ck_assert_str_eq(acceld_err_reason((enum acceld_err)e), reason_name(r));
	}
	ck_assert_int_eq(acceld_err_to_reason(ACCELD_ERR_COUNT), REASON_INTERNAL);
}
END_TEST

START_TEST(every_error_code_has_a_phrase)
{
	for (int e = 0; e < ACCELD_ERR_COUNT; e++)
		ck_assert_uint_gt(strlen(acceld_err_str((enum acceld_err)e)), 0);
	ck_assert_str_eq(acceld_err_reason(ACCELD_OK), "OK");
	ck_assert_str_eq(acceld_err_reason(ACCELD_ENOTFOUND), "NOT_FOUND");
	ck_assert_int_eq(acceld_err_to_reason(ACCELD_ERR_COUNT), REASON_INTERNAL);
}
END_TEST

START_TEST(a_refusal_says_why_and_carries_its_members)
{
	struct refusal r = {.err = ACCELD_OK};
	char big[1024];

	refusal_set(&r, ACCELD_ECONFLICT, REASON_NO_MATCHING_DEVICE, "no device of %d has %s", 3, "a GPU");
	ck_assert_int_eq(r.err, ACCELD_ECONFLICT);
	ck_assert_int_eq(r.reason, REASON_NO_MATCHING_DEVICE);
	ck_assert_str_eq(r.detail, "no device of 3 has a GPU");
	ck_assert_ptr_null(r.extra);
	/* the members survive a second refusal_set; release frees them and leaves the struct usable */
	r.extra = json_pack("{s:i}", "elements", 7);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	refusal_set(&r, ACCELD_ETOOLARGE, REASON_JOB_TOO_LARGE, "%s", big);
	ck_assert_uint_eq(strlen(r.detail), sizeof(r.detail) - 1); /* cut at its size */
	ck_assert_int_eq(json_integer_value(json_object_get(r.extra, "elements")), 7);
	refusal_release(&r);
	ck_assert_ptr_null(r.extra);
	refusal_release(&r);
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("err");
	TCase *tc = tcase_create("err");

	tcase_add_test(tc, every_error_code_maps_to_a_reason_with_its_status);
	tcase_add_test(tc, every_error_code_has_a_phrase);
	tcase_add_test(tc, a_refusal_says_why_and_carries_its_members);
	suite_add_tcase(s, tc);
	return s;
}
