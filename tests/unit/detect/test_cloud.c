/*
 * Unit tests for cloud.c: the DMI rules on the fixture trees, the parsers of the three services' answers (good,
 * malformed and hostile), and learning without a service: ACCELD_CLOUD=none and a host whose DMI names no cloud
 * ask nothing, a cloud host whose service is not there fails with a note. The services themselves are stood in
 * for by tests/http/fake_metadata.py in the black-box tests.
 */
#include <string.h>

#include "check_main.h"
#include "detect/cloud.h"

static char root[256];

static char *fixture(const char *name)
{
	snprintf(root, sizeof(root), "tests/fixtures/%s/sys", name);
	return root;
}

START_TEST(dmi_names_the_cloud)
{
	char why[160];

	ck_assert_int_eq(cloud_from_dmi(fixture("gce-no-tpu"), why, sizeof(why)), CLOUD_GCE);
	ck_assert_int_eq(cloud_from_dmi(fixture("gce-tpu-v6e"), why, sizeof(why)), CLOUD_GCE);
	ck_assert_int_eq(cloud_from_dmi(fixture("aws-m7i"), why, sizeof(why)), CLOUD_AWS);
	ck_assert_ptr_nonnull(strstr(why, "Amazon EC2"));
	ck_assert_int_eq(cloud_from_dmi(fixture("azure-vm"), why, sizeof(why)), CLOUD_AZURE);
	ck_assert_ptr_nonnull(strstr(why, "7783-7084-3265-9085-8269-3286-77"));
	/* a Microsoft "Virtual Machine" without Azure's asset tag is any Hyper-V guest */
	ck_assert_int_eq(cloud_from_dmi(fixture("hyperv-vm"), why, sizeof(why)), CLOUD_NONE);
	ck_assert_int_eq(cloud_from_dmi(fixture("bare-metal"), why, sizeof(why)), CLOUD_NONE);
	ck_assert_ptr_nonnull(strstr(why, "PowerEdge R750"));
	ck_assert_int_eq(cloud_from_dmi(fixture("no-such-tree"), why, sizeof(why)), CLOUD_NONE);
}
END_TEST

START_TEST(gce_answers)
{
	char out[CLOUD_NAME_MAX];
	int spot = -1;
	const char *t = "projects/123456/machineTypes/n2d-standard-16\n";

	ck_assert_int_eq(cloud_parse_gce_path(t, strlen(t), out, sizeof(out)), 0);
	ck_assert_str_eq(out, "n2d-standard-16");
	ck_assert_int_eq(cloud_parse_gce_path("e2-medium", 9, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "e2-medium");
	ck_assert_int_eq(cloud_parse_gce_path("projects/1/zones/", 17, out, sizeof(out)), -1);
	ck_assert_int_eq(cloud_parse_gce_path("<html>x y</html>", 16, out, sizeof(out)), -1);
	ck_assert_int_eq(cloud_gce_region_of_zone("us-central1-a", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "us-central1");
	ck_assert_int_eq(cloud_gce_region_of_zone("nozone", out, sizeof(out)), -1);
	ck_assert_int_eq(cloud_gce_region_of_zone("us-central1-", out, sizeof(out)), -1);
	t = "{\"preemptible\":\"TRUE\"}";
	ck_assert_int_eq(cloud_parse_gce_scheduling(t, strlen(t), &spot), 0);
	ck_assert_int_eq(spot, 1);
	t = "{\"preemptible\":\"FALSE\",\"provisioningModel\":\"SPOT\"}";
	ck_assert_int_eq(cloud_parse_gce_scheduling(t, strlen(t), &spot), 0);
	ck_assert_int_eq(spot, 1);
	t = "{\"preemptible\":\"FALSE\",\"provisioningModel\":\"STANDARD\"}";
	ck_assert_int_eq(cloud_parse_gce_scheduling(t, strlen(t), &spot), 0);
	ck_assert_int_eq(spot, 0);
	ck_assert_int_eq(cloud_parse_gce_scheduling("{}", 2, &spot), -1);
	ck_assert_int_eq(cloud_parse_gce_scheduling("TRUE", 4, &spot), -1);
}
END_TEST

START_TEST(aws_answers)
{
	struct cloud_host h;
	int spot = -1;
	const char *doc = "{\"instanceType\":\"m7i.large\",\"region\":\"us-east-1\",\"availabilityZone\":\"us-east-1b\","
			  "\"instanceId\":\"i-0123456789abcdef0\"}";

	cloud_host_init(&h);
	ck_assert_int_eq(cloud_parse_aws_identity(doc, strlen(doc), &h), 0);
	ck_assert_str_eq(h.instance_type, "m7i.large");
	ck_assert_str_eq(h.region, "us-east-1");
	ck_assert_str_eq(h.zone, "us-east-1b");
	cloud_host_init(&h);
	doc = "{\"instanceType\":7,\"region\":\"us-east-1\"}";
	ck_assert_int_eq(cloud_parse_aws_identity(doc, strlen(doc), &h), -1);
	ck_assert_str_eq(h.instance_type, "");
	doc = "{\"instanceType\":\"m7i.large; rm -rf\",\"region\":\"us-east-1\"}";
	ck_assert_int_eq(cloud_parse_aws_identity(doc, strlen(doc), &h), -1);
	doc = "{\"instanceType\":\"m7i.large\",\"instanceType\":\"p5.48xlarge\",\"region\":\"us-east-1\"}";
	ck_assert_int_eq(cloud_parse_aws_identity(doc, strlen(doc), &h), -1);
	ck_assert_int_eq(cloud_parse_aws_lifecycle("spot", 4, &spot), 0);
	ck_assert_int_eq(spot, 1);
	ck_assert_int_eq(cloud_parse_aws_lifecycle("on-demand\n", 10, &spot), 0);
	ck_assert_int_eq(spot, 0);
	ck_assert_int_eq(cloud_parse_aws_lifecycle("maybe", 5, &spot), -1);
}
END_TEST

START_TEST(azure_answers)
{
	struct cloud_host h;
	const char *doc = "{\"vmSize\":\"Standard_D8s_v5\",\"location\":\"eastus\",\"zone\":\"\",\"priority\":\"Spot\"}";

	cloud_host_init(&h);
	ck_assert_int_eq(cloud_parse_azure_compute(doc, strlen(doc), &h), 0);
	ck_assert_str_eq(h.instance_type, "Standard_D8s_v5");
	ck_assert_str_eq(h.region, "eastus");
	ck_assert_str_eq(h.zone, "");
	ck_assert_int_eq(h.spot, 1);
	doc = "{\"vmSize\":\"Standard_D8s_v5\",\"location\":\"eastus\",\"priority\":\"Regular\"}";
	ck_assert_int_eq(cloud_parse_azure_compute(doc, strlen(doc), &h), 0);
	ck_assert_int_eq(h.spot, 0);
	doc = "{\"vmSize\":\"Standard_D8s_v5\",\"location\":\"eastus\",\"priority\":\"Premium\"}";
	ck_assert_int_eq(cloud_parse_azure_compute(doc, strlen(doc), &h), -1);
	doc = "{\"vmSize\":\"Standard_D8s_v5\"";
	ck_assert_int_eq(cloud_parse_azure_compute(doc, strlen(doc), &h), -1);
	doc = "[\"vmSize\"]";
	ck_assert_int_eq(cloud_parse_azure_compute(doc, strlen(doc), &h), -1);
}
END_TEST

START_TEST(names_are_bounded)
{
	char big[200];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(cloud_name_check(big), -1);
	big[64] = '\0';
	ck_assert_int_eq(cloud_name_check(big), -1);
	big[63] = '\0';
	ck_assert_int_eq(cloud_name_check(big), 0);
	ck_assert_int_eq(cloud_name_check(""), -1);
	ck_assert_int_eq(cloud_name_check("a b"), -1);
	ck_assert_int_eq(cloud_name_check("a\"b"), -1);
}
END_TEST

START_TEST(learning_without_a_service)
{
	struct config cfg;
	struct cloud_host h;
	json_t *o;
	char gce[] = "http://127.0.0.1:9/computeMetadata/v1", other[] = "http://127.0.0.1:9";

	memset(&cfg, 0, sizeof(cfg));
	cfg.gce_metadata_url = gce;
	cfg.aws_metadata_url = other;
	cfg.azure_metadata_url = other;
	cfg.sysfs_root = fixture("bare-metal");
	cloud_learn(&cfg, &h);
	ck_assert_int_eq(h.state, CLOUD_NOT_A_CLOUD);
	ck_assert_str_eq(h.note, "");
	cfg.cloud = CLOUD_CHOICE_NONE;
	cfg.sysfs_root = fixture("gce-no-tpu");
	cloud_learn(&cfg, &h);
	ck_assert_int_eq(h.state, CLOUD_OFF);
	/* a cloud host whose service refuses: failed, with a note, and nothing half-known */
	cfg.cloud = CLOUD_CHOICE_AUTO;
	cloud_learn(&cfg, &h);
	ck_assert_int_eq(h.cloud, CLOUD_GCE);
	ck_assert_int_eq(h.state, CLOUD_FAILED);
	ck_assert_ptr_nonnull(strstr(h.note, "GCE metadata machine-type"));
	ck_assert_str_eq(h.instance_type, "");
	ck_assert_int_eq(h.spot, -1);
	o = cloud_host_json(&h);
	ck_assert_str_eq(json_string_value(json_object_get(o, "state")), "failed");
	ck_assert(json_is_null(json_object_get(o, "instance_type")));
	ck_assert(json_is_null(json_object_get(o, "spot")));
	json_decref(o);
	cfg.cloud = CLOUD_CHOICE_AWS;
	cloud_learn(&cfg, &h);
	ck_assert_int_eq(h.cloud, CLOUD_AWS);
	ck_assert_ptr_nonnull(strstr(h.note, "IMDSv2"));
	cfg.cloud = CLOUD_CHOICE_AZURE;
	cloud_learn(&cfg, &h);
	ck_assert_ptr_nonnull(strstr(h.note, "Azure metadata"));
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("cloud");
	TCase *tc = tcase_create("cloud");

	tcase_add_test(tc, dmi_names_the_cloud);
	tcase_add_test(tc, gce_answers);
	tcase_add_test(tc, aws_answers);
	tcase_add_test(tc, azure_answers);
	tcase_add_test(tc, names_are_bounded);
	tcase_add_test(tc, learning_without_a_service);
	suite_add_tcase(s, tc);
	return s;
}
