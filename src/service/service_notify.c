/* sd_notify's protocol in a few lines: one AF_UNIX datagram per message,
 * sent from a socket opened for it and closed at once, so the service
 * holds no descriptor for the manager between messages. */
#include "config.h"

#include "service_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Fills address from NOTIFY_SOCKET's value; returns its length, or 0 when
 * the value names no AF_UNIX socket ("vsock:" and other forms). */
static socklen_t service_notify_address(const char *name, struct sockaddr_un *address)
{
	size_t len = strlen(name);

	if ((name[0] != '/' && name[0] != '@') || len >= sizeof address->sun_path)
		return 0;
	memset(address, 0, sizeof *address);
	address->sun_family = AF_UNIX;
	memcpy(address->sun_path, name, len);
	/* An abstract name starts with a zero byte and is exactly len long. */
	if (name[0] == '@')
		address->sun_path[0] = '\0';
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
}

int service_notify(const char *state)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un address;
	socklen_t address_len;
	size_t len = strlen(state);
	ssize_t sent;
	int fd, saved;

	if (name == NULL || name[0] == '\0')
		return 0;
	address_len = service_notify_address(name, &address);
	if (address_len == 0) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	sent = sendto(fd, state, len, MSG_NOSIGNAL, (const struct sockaddr *)&address, address_len);
	saved = errno;
	close(fd);
	if (sent != (ssize_t)len) {
		errno = sent < 0 ? saved : EMSGSIZE;
		return -1;
	}
	return 1;
}
