/* The helpers of check.h shared by every library's check macro. */
#include "check.h"
#include "log.h"

#include <execinfo.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_in_child;

MT_NORETURN void check_fail(const char *lib, const char *call, const char *detail,
			    const char *file, int line)
{
	char device[32] = "";
	if (log_device() >= 0)
		snprintf(device, sizeof(device), ", GPU %d", log_device());
	fprintf(stderr, "mtrain: %s error: %s failed (%s) at %s:%d on rank %d (%s%s)\n",
		lib, call, detail, file, line, log_rank(), log_host(), device);
	fflush(stderr);
	if (g_in_child)
		_exit(CHECK_CHILD_FAILED);
	int inited = 0;
	MPI_Initialized(&inited);
	if (inited)
		MPI_Abort(MPI_COMM_WORLD, 1);
	abort();
}

const char *mpi_error_text(int rc)
{
	static char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error %d", rc);
	return text;
}

void *xmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);
	ALLOC_CHECK(p);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	ALLOC_CHECK(p);
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	ALLOC_CHECK(p);
	return p;
}

/* The crash line, made at start-up: the handler may only write(2). */
static char g_crash_line[256];
static size_t g_crash_len;

static void on_crash(int sig)
{
	char num[4] = {(char)('0' + sig / 10 % 10), (char)('0' + sig % 10), '\n', 0};
	ssize_t rc = write(STDERR_FILENO, g_crash_line, g_crash_len);
	rc = write(STDERR_FILENO, num[0] == '0' ? num + 1 : num, num[0] == '0' ? 2 : 3);
	void *frames[32];
	backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
	(void)rc;
	_exit(128 + sig); /* mpirun sees a rank gone and ends the job */
}

void check_catch_crashes(void)
{
	size_t used = log_error_prefix(1, g_crash_line, sizeof(g_crash_line));
	snprintf(g_crash_line + used, sizeof(g_crash_line) - used,
		 "crashed (a bug: please report it); ending the job; signal ");
	g_crash_len = strlen(g_crash_line);
	void *warm[1];
	backtrace(warm, 1); /* loads what backtrace needs now, not in the handler */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	const int sigs[5] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (int i = 0; i < 5; i++)
		sigaction(sigs[i], &sa, NULL);
}

void check_in_child(void)
{
	g_in_child = 1;
	const int sigs[5] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	for (int i = 0; i < 5; i++)
		signal(sigs[i], SIG_DFL);
}
