/* Unit tests for holders.c: a GPU's other processes from NVML (the fake's FAKE_NVML_PROCESSES), a lock file's owner
 * from /proc/locks, and how they are named. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "detect/holders.h"

#define H100_UUID "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
#define L4_UUID "GPU-89a1c3e0-1111-2222-3333-444455556666"

static char nvml[512];

static struct config config_for_tests(void)
{
	const char *build = getenv("ACCELD_BUILD");
	struct config cfg;

	memset(&cfg, 0, sizeof(cfg));
	snprintf(nvml, sizeof(nvml), "%s/fakes/libnvml.so", build && *build ? build : "build");
	cfg.nvml_library = nvml;
	cfg.proc_root = "/proc";
	return cfg;
}

START_TEST(gpu_processes_from_nvml)
{
	struct config cfg = config_for_tests();
	struct holder h[HOLDERS_MAX];
	char list[64], why[128], text[256];
	size_t n;

	/* the parent (visible, named) on GPU 0, this process too (never its own holder), an unknown pid on GPU 1 */
	snprintf(list, sizeof(list), "0:%ld,0:%ld,1:4194000", (long)getppid(), (long)getpid());
	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_PROCESSES", list, 1);
	n = holders_gpu(&cfg, H100_UUID, h, HOLDERS_MAX, why, sizeof(why));
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(h[0].pid, (long)getppid());
	ck_assert_str_ne(h[0].name, "");
	ck_assert_str_eq(why, "");
	n = holders_gpu(&cfg, L4_UUID, h, HOLDERS_MAX, why, sizeof(why));
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(h[0].pid, 4194000);
	ck_assert_str_eq(h[0].name, ""); /* no such process here: no name */
	ck_assert_uint_eq(h[0].bytes, 1ull << 30); /* the fake's default */
	holders_text(h, n, text, sizeof(text));
	ck_assert_str_eq(text, "process 4194000 holding 1073741824 bytes");
	/* none, an unknown GPU, no NVML */
	unsetenv("FAKE_NVML_PROCESSES");
	ck_assert_uint_eq(holders_gpu(&cfg, H100_UUID, h, HOLDERS_MAX, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "");
	ck_assert_uint_eq(holders_gpu(&cfg, "GPU-nope", h, HOLDERS_MAX, why, sizeof(why)), 0);
	ck_assert_str_ne(why, "");
	ck_assert_uint_eq(holders_gpu(&cfg, "", h, HOLDERS_MAX, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "UUID"));
	cfg.nvml_library = "/nonexistent/libnvidia-ml.so";
	ck_assert_uint_eq(holders_gpu(&cfg, H100_UUID, h, HOLDERS_MAX, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "not loaded"));
	unsetenv("FAKE_NVML_COUNT");
}
END_TEST

/* The GPU's memory: others with their bytes; this process and those it started are acceld's own. */
START_TEST(gpu_memory_holders)
{
	struct config cfg = config_for_tests();
	struct holder h[HOLDERS_MAX];
	char list[160], why[128], text[256];
	uint64_t own = 7;
	pid_t child = fork();
	size_t n;

	ck_assert_int_ge(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	snprintf(list, sizeof(list), "0:%ld:5000,0:%ld:300,0:%ld:20,0:4194000", (long)getppid(), (long)getpid(),
		 (long)child);
	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_PROCESSES", list, 1);
	n = holders_gpu_memory(&cfg, H100_UUID, h, HOLDERS_MAX, &own, why, sizeof(why));
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(h[0].pid, (long)getppid());
	ck_assert_uint_eq(h[0].bytes, 5000);
	ck_assert_int_eq(h[1].pid, 4194000);
	ck_assert_uint_eq(h[1].bytes, 1ull << 30);
	ck_assert_uint_eq(own, 320);
	/* holders_gpu leaves out this process alone */
	ck_assert_uint_eq(holders_gpu(&cfg, H100_UUID, h, HOLDERS_MAX, why, sizeof(why)), 3);
	h[0] = (struct holder){.pid = 12, .name = "python3", .bytes = 135677329408ull};
	holders_text(h, 1, text, sizeof(text));
	ck_assert_str_eq(text, "process 12 (python3) holding 135677329408 bytes");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unsetenv("FAKE_NVML_PROCESSES");
	ck_assert_uint_eq(holders_gpu_memory(&cfg, H100_UUID, h, HOLDERS_MAX, &own, why, sizeof(why)), 0);
	ck_assert_uint_eq(own, 0);
	unsetenv("FAKE_NVML_COUNT");
}
END_TEST

START_TEST(lock_file_owner)
{
	struct config cfg = config_for_tests();
	char path[] = "/tmp/acceld-lock-XXXXXX";
	int fd = mkstemp(path), ready[2], done[2];
	struct holder h;
	char text[128];
	pid_t child;

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert(!holders_lock_file(&cfg, path, &h));
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(done), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		/* as libtpu does: lockf on the lock file, held until the process exits */
		int lfd = open(path, O_RDWR);
		char c;

		if (lfd < 0 || lockf(lfd, F_TLOCK, 0) != 0)
			_exit(1);
		if (write(ready[1], "x", 1) != 1 || read(done[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	{
		char c;

		ck_assert_int_eq(read(ready[0], &c, 1), 1);
	}
	ck_assert(holders_lock_file(&cfg, path, &h));
	ck_assert_int_eq(h.pid, child);
	ck_assert_str_ne(h.name, "");
	holders_text(&h, 1, text, sizeof(text));
	ck_assert_ptr_nonnull(strstr(text, "process "));
	ck_assert_ptr_nonnull(strstr(text, " ("));
	ck_assert_int_eq(write(done[1], "x", 1), 1);
	waitpid(child, NULL, 0);
	ck_assert(!holders_lock_file(&cfg, path, &h));
	unlink(path);
	ck_assert(!holders_lock_file(&cfg, path, &h));
	close(ready[0]);
	close(ready[1]);
	close(done[0]);
	close(done[1]);
}
END_TEST

START_TEST(named_in_a_line)
{
	struct holder h[2] = {{.pid = 12, .name = "python3"}, {.pid = 13, .name = ""}};
	char text[128];

	holders_text(h, 2, text, sizeof(text));
	ck_assert_str_eq(text, "process 12 (python3), process 13");
}
END_TEST

Suite *make_suite(void)
{
	Suite *s = suite_create("holders");
	TCase *tc = tcase_create("holders");

	tcase_add_test(tc, gpu_processes_from_nvml);
	tcase_add_test(tc, gpu_memory_holders);
	tcase_add_test(tc, lock_file_owner);
	tcase_add_test(tc, named_in_a_line);
	suite_add_tcase(s, tc);
	return s;
}
