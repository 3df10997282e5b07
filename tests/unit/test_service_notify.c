/* The service's notification to its manager: the exact datagram arrives on
 * a socket the test binds, by path and by abstract name; nothing is sent,
 * and no descriptor is left open, when NOTIFY_SOCKET is unset or names no
 * AF_UNIX socket. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "service_notify.h"
#include "unit.h"

/* The lowest free descriptor: the same before and after a call that
 * closed what it opened. */
static int service_notify_test_next_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	close(fd);
	return fd;
}

/* A datagram socket bound to name (a path, or '@' for an abstract name). */
static int service_notify_test_bind(const char *name)
{
	struct sockaddr_un address = { .sun_family = AF_UNIX };
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_lt(len, sizeof address.sun_path);
	memcpy(address.sun_path, name, len);
	if (name[0] == '@')
		address.sun_path[0] = '\0';
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&address,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
			 0);
	return fd;
}

/* Sends state to a socket bound at name and checks the one datagram that
 * arrived, already queued when service_notify returned. */
static void service_notify_test_round_trip(const char *name, const char *state)
{
	char received[64];
	int listener = service_notify_test_bind(name), next_fd;
	ssize_t n;

	next_fd = service_notify_test_next_fd();
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", name, 1), 0);
	ck_assert_int_eq(service_notify(state), 1);
	ck_assert_int_eq(service_notify_test_next_fd(), next_fd);
	n = recv(listener, received, sizeof received, MSG_DONTWAIT);
	ck_assert_int_eq(n, (ssize_t)strlen(state));
	ck_assert_mem_eq(received, state, (size_t)n);
	n = recv(listener, received, sizeof received, MSG_DONTWAIT);
	ck_assert_int_eq(n, -1);
	ck_assert_int_eq(errno, EAGAIN);
	unsetenv("NOTIFY_SOCKET");
	close(listener);
}

START_TEST(test_service_notify_unset)
{
	int next_fd = service_notify_test_next_fd();

	unsetenv("NOTIFY_SOCKET");
	ck_assert_int_eq(service_notify(SERVICE_NOTIFY_READY), 0);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "", 1), 0);
	ck_assert_int_eq(service_notify(SERVICE_NOTIFY_READY), 0);
	unsetenv("NOTIFY_SOCKET");
	ck_assert_int_eq(service_notify_test_next_fd(), next_fd);
}
END_TEST

START_TEST(test_service_notify_path)
{
	char dir[] = "/tmp/fasttime-notify-XXXXXX", name[64];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(name, sizeof name, "%s/notify", dir);
	service_notify_test_round_trip(name, SERVICE_NOTIFY_READY);
	unlink(name);
	rmdir(dir);
}
END_TEST

START_TEST(test_service_notify_abstract)
{
	char name[64];

	snprintf(name, sizeof name, "@fasttime-notify-test-%d", (int)getpid());
	service_notify_test_round_trip(name, SERVICE_NOTIFY_STOPPING);
}
END_TEST

START_TEST(test_service_notify_refused)
{
	int next_fd = service_notify_test_next_fd();

	/* Neither a path nor an abstract name: not tried. */
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "vsock:2:1234", 1), 0);
	errno = 0;
	ck_assert_int_eq(service_notify(SERVICE_NOTIFY_READY), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	/* A path where nothing listens: the error, and the socket closed. */
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "/nonexistent/fasttime/notify", 1), 0);
	errno = 0;
	ck_assert_int_eq(service_notify(SERVICE_NOTIFY_READY), -1);
	ck_assert_int_eq(errno, ENOENT);
	unsetenv("NOTIFY_SOCKET");
	ck_assert_int_eq(service_notify_test_next_fd(), next_fd);
}
END_TEST

Suite *suite_service_notify(void)
{
	Suite *s = suite_create("service_notify");
	TCase *tc = tcase_create("notify");

	tcase_add_test(tc, test_service_notify_unset);
	tcase_add_test(tc, test_service_notify_path);
	tcase_add_test(tc, test_service_notify_abstract);
	tcase_add_test(tc, test_service_notify_refused);
	suite_add_tcase(s, tc);
	return s;
}
