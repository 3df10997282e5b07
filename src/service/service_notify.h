/* The service's word to the service manager that started it (systemd's
 * Type=notify): a datagram to the socket named by NOTIFY_SOCKET, without
 * libsystemd. Nothing happens when NOTIFY_SOCKET is not set. */
#ifndef FASTTIME_SERVICE_NOTIFY_H
#define FASTTIME_SERVICE_NOTIFY_H

/* What the manager is told: the page is published, or is being removed. */
#define SERVICE_NOTIFY_READY	"READY=1"
#define SERVICE_NOTIFY_STOPPING "STOPPING=1"

/* Sends state (lines of NAME=VALUE) to NOTIFY_SOCKET: a path, or an
 * abstract name written with a leading '@'. Returns 1 when sent, 0 when
 * no manager asked (NOTIFY_SOCKET unset or empty), -1 with errno when the
 * socket cannot be reached or is no AF_UNIX name. */
int service_notify(const char *state);

#endif
