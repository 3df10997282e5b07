/* The service's side of a calibration service's page: the file made
 * beside its path under a temporary name and mapped over the table
 * read-write (a sealed memfd named by a link, for a service not run as
 * root), its directory, the locks that keep one service per page, its
 * name given (published), made append-only, and taken away. */
#include "config.h"

#include "service_page.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watch.h"

/* A reader refuses a page that grants more than twice the validity the
 * engine grants after a look. */
_Static_assert(SERVICE_PAGE_MAX_VALID_NS == 2 * WATCH_VALID_NS,
	       "a page's longest validity is twice the engine's");

/* Makes path's directory, one level, as the service's defaults need:
 * /run/fasttime for everyone to read, $XDG_RUNTIME_DIR/fasttime for its
 * user alone. */
static bool service_page_make_directory(const char *path, char *error, size_t error_len)
{
	mode_t mode = geteuid() == 0 ? 0755 : 0700;
	char directory[PATH_MAX];
	char *slash;

	snprintf(directory, sizeof directory, "%s", path);
	slash = strrchr(directory, '/');
	if (slash == NULL || slash == directory)
		return true;
	*slash = '\0';
	if (mkdir(directory, mode) != 0) {
		if (errno == EEXIST)
			return true;
		snprintf(error, error_len, "cannot make %s: %s", directory, strerror(errno));
		return false;
	}
	/* Set again: mkdir's mode is cut by the umask, and every reader of
	 * the system's page must be able to enter its directory. */
	if (chmod(directory, mode) != 0) {
		snprintf(error, error_len, "cannot set the mode of %s: %s", directory,
			 strerror(errno));
		return false;
	}
	return true;
}

/* The directory the page is named in must be the service's to control:
 * owned by its user or by root, and written by nobody else. Where others
 * may write (a 0777 directory, or a sticky one as /tmp), anyone can put a
 * link or a file at the page's name, or at the lock's, and deny service to
 * every reader. */
static bool service_page_check_directory(const char *path, char *error, size_t error_len)
{
	char directory[PATH_MAX];
	char *slash;
	struct stat st;

	snprintf(directory, sizeof directory, "%s", path);
	slash = strrchr(directory, '/');
	if (slash == NULL)
		snprintf(directory, sizeof directory, ".");
	else
		slash[slash == directory ? 1 : 0] = '\0';
	if (stat(directory, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(error, error_len, "cannot publish in %s: not a directory", directory);
		return false;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(error, error_len,
			 "will not publish in %s: it belongs to another user (uid %u); give "
			 "--page a directory of this user's or root's",
			 directory, (unsigned)st.st_uid);
		return false;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(error, error_len,
			 "will not publish in %s: others may write it (mode %04o); give --page a "
			 "directory only its owner writes",
			 directory, (unsigned)(st.st_mode & 07777));
		return false;
	}
	return true;
}

/* Whether fd and name are one file. */
static bool service_page_same_file(int fd, const char *name)
{
	struct stat held, named;

	return fstat(fd, &held) == 0 && lstat(name, &named) == 0 && held.st_dev == named.st_dev &&
	       held.st_ino == named.st_ino;
}

/* One service per page: a lock file beside it, held for the service's
 * life. A second service on the same path would rename its page over the
 * first's, which would go on calibrating for nobody. The lock counts only
 * while its name is still the locked file's: a service stopping removes
 * the name while it holds the lock, and one that opened the file just
 * before must try the name's new file. */
static bool service_page_lock(struct service_page_writer *writer, char *error, size_t error_len)
{
	for (unsigned attempt = 0; attempt < 3; attempt++) {
		int fd = open(writer->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		bool locked, same;

		if (fd < 0) {
			snprintf(error, error_len, "cannot open %s: %s", writer->lock,
				 strerror(errno));
			return false;
		}
		locked = flock(fd, LOCK_EX | LOCK_NB) == 0;
		same = service_page_same_file(fd, writer->lock);
		if (locked && same) {
			writer->lock_fd = fd;
			return true;
		}
		close(fd);
		if (same) {
			snprintf(error, error_len, "another service publishes %s (%s is locked)",
				 writer->path, writer->lock);
			return false;
		}
	}
	snprintf(error, error_len, "cannot lock %s: another service keeps replacing it",
		 writer->lock);
	return false;
}

/* A byte of the page that its service holds a write lock on, for its
 * life: only a writer of the page can take one, and a reader's probe for
 * it takes nothing. */
static struct flock service_page_held_byte(short type)
{
	struct flock byte = { .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

	return byte;
}

/* Whether a live service holds the page now named path: its write lock
 * on it tells, whatever became of path.lock (removed by hand, and a new
 * one taken by a second service). Its pid from the header, for the
 * message. */
static bool service_page_held_by_another(const char *path, int *pid)
{
	struct service_page_header header;
	struct flock probe = service_page_held_byte(F_RDLCK);
	struct stat st;
	const char *refused;
	bool held, linked, found;
	/* A file, or a service's link to its memfd, as readers open them. */
	int fd = service_page_open(path, NULL, &st, &linked, &found, &refused);

	if (fd < 0)
		return false;
	held = fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
	*pid = pread(fd, &header, sizeof header, 0) == (ssize_t)sizeof header
		   ? (int)header.service_pid
		   : 0;
	close(fd);
	return held;
}

/* Sets or clears the append-only flag of the file fd: true when done. */
static bool service_page_set_append_only(int fd, bool on)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0)
		return false;
	flags = on ? flags | FS_APPEND_FL : flags & ~FS_APPEND_FL;
	return ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
}

/* Clears the append-only flag of the page a service that ended without
 * its stop (SIGKILL) left at path: the flag refuses the rename over it. */
static void service_page_release_left_page(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		service_page_set_append_only(fd, false);
	close(fd);
}

/* A memfd that can never be made executable (Linux 6.3), where the
 * headers are older. */
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008u
#endif

/* The page of a service not run as root: a memfd (its descriptor), which
 * service_page_seal seals once it has its size. Where the kernel refuses
 * executable memfds (vm.memfd_noexec), with the flag that asks for none;
 * an older kernel knows no such flag. */
static int service_page_make_memfd(void)
{
	int fd = memfd_create("fasttime-page", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);

	if (fd >= 0 || errno != EINVAL)
		return fd;
	return memfd_create("fasttime-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

/* Seals the memfd fd at its size for good: nobody, its owner included,
 * can shrink or grow it, or take the seals off. */
static bool service_page_seal(int fd)
{
	return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0 &&
	       service_page_sealed(fd);
}

/* Names the sealed page of a service not run as root (its memfd, fd)
 * beside path under a temporary name: a link to the memfd as this
 * process's /proc shows it, which readers of this user open (the kernel
 * lets a process of the same user open another's descriptors there). The
 * link is checked to lead to the memfd: where /proc is missing, or shows
 * another PID namespace, no reader could open it. */
static bool service_page_link(struct service_page_writer *writer, int fd, const struct stat *st,
			      char *error, size_t error_len)
{
	struct stat linked;
	int made;

	if (snprintf(writer->link, sizeof writer->link, "/proc/%d/fd/%d", (int)getpid(), fd) >=
		(int)sizeof writer->link ||
	    snprintf(writer->temporary, sizeof writer->temporary, "%s.XXXXXX", writer->path) >=
		(int)sizeof writer->temporary) {
		snprintf(error, error_len, "the page's link is too long");
		writer->temporary[0] = '\0';
		return false;
	}
	/* A name of its own, made as a file, then a link in its place: the
	 * directory is this user's alone (service_page_check_directory). */
	made = mkostemp(writer->temporary, O_CLOEXEC);
	if (made < 0 || (close(made), unlink(writer->temporary)) != 0 ||
	    symlink(writer->link, writer->temporary) != 0) {
		snprintf(error, error_len, "cannot make %s: %s", writer->temporary,
			 strerror(errno));
		if (made < 0)
			writer->temporary[0] = '\0';
		return false;
	}
	if (stat(writer->temporary, &linked) != 0 || linked.st_dev != st->st_dev ||
	    linked.st_ino != st->st_ino) {
		snprintf(error, error_len,
			 "%s does not lead to this service's page (is /proc mounted, for this "
			 "PID namespace?)",
			 writer->link);
		return false;
	}
	return true;
}

bool service_page_create(struct service_page_writer *writer, const char *path,
			 const struct settings *settings, char *error, size_t error_len)
{
	struct service_page_header header = {
		.magic = SERVICE_PAGE_MAGIC,
		.version = SERVICE_PAGE_VERSION,
		.size = SERVICE_PAGE_SIZE,
		.service_pid = (int32_t)getpid(),
		.interval_ms = settings->interval_ms,
		.hidden_hwcaps = settings->hidden_hwcaps,
		.force = settings->force,
	};
	struct flock held = service_page_held_byte(F_WRLCK);
	struct stat st;
	int fd, written, holder;

	service_page_time_namespace(&header.time_ns_device, &header.time_ns_inode);
	memset(writer, 0, sizeof *writer);
	writer->lock_fd = -1;
	writer->page_fd = -1;
	written = snprintf(writer->path, sizeof writer->path, "%s", path);
	if (written <= 0 || written >= (int)sizeof writer->path ||
	    snprintf(writer->temporary, sizeof writer->temporary, "%s.XXXXXX", path) >=
		(int)sizeof writer->temporary ||
	    snprintf(writer->lock, sizeof writer->lock, "%s.lock", path) >=
		(int)sizeof writer->lock) {
		snprintf(error, error_len, "the page's path is too long");
		return false;
	}
	if (!service_page_make_directory(path, error, error_len) ||
	    !service_page_check_directory(path, error, error_len) ||
	    !service_page_lock(writer, error, error_len))
		return false;
	if (service_page_held_by_another(path, &holder)) {
		snprintf(error, error_len, "another service publishes %s (pid %d holds the page)",
			 path, holder);
		service_page_remove(writer);
		return false;
	}
	/* Root's page is a file, made append-only once published; a page
	 * of another user's is a sealed memfd: its owner could shrink a file
	 * under its readers, who refuse one (service_page_look_at). Where no
	 * memfd can be made or sealed (an old kernel, a filter), a service
	 * not run as root publishes nothing. */
	writer->sealed = geteuid() != 0;
	if (writer->sealed)
		writer->temporary[0] = '\0'; /* named once sealed: service_page_link */
	fd = writer->sealed ? service_page_make_memfd() : mkostemp(writer->temporary, O_CLOEXEC);
	if (fd < 0) {
		if (writer->sealed)
			snprintf(error, error_len,
				 "cannot make a sealed page (memfd_create: %s): a service not run "
				 "as root publishes no page its owner could shrink",
				 strerror(errno));
		else
			snprintf(error, error_len, "cannot make %s: %s", writer->temporary,
				 strerror(errno));
		writer->temporary[0] = '\0';
		service_page_remove(writer);
		return false;
	}
	writer->page_fd = fd;
	memcpy(table_page.header, &header, sizeof header);
	if (fchmod(fd, 0644) != 0 ||
	    write(fd, &table_page, SERVICE_PAGE_SIZE) != (ssize_t)SERVICE_PAGE_SIZE ||
	    fstat(fd, &st) != 0 || fcntl(fd, F_OFD_SETLK, &held) != 0) {
		snprintf(error, error_len, "cannot write %s: %s",
			 writer->sealed ? "the page" : writer->temporary, strerror(errno));
		service_page_remove(writer);
		return false;
	}
	if (writer->sealed && !service_page_seal(fd)) {
		snprintf(error, error_len,
			 "cannot seal the page: %s; a service not run as root publishes no page "
			 "its owner could shrink",
			 strerror(errno));
		service_page_remove(writer);
		return false;
	}
	if (writer->sealed && !service_page_link(writer, fd, &st, error, error_len)) {
		service_page_remove(writer);
		return false;
	}
	if (mmap(&table_page, SERVICE_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 0) == MAP_FAILED) {
		snprintf(error, error_len, "cannot map the page: %s", strerror(errno));
		service_page_remove(writer);
		return false;
	}
	writer->device = st.st_dev;
	writer->inode = st.st_ino;
	return true;
}

bool service_page_publish(struct service_page_writer *writer, char *error, size_t error_len)
{
	/* A page that a killed service left append-only refuses the rename
	 * over it: no live service holds it (service_page_create). */
	if (rename(writer->temporary, writer->path) != 0 &&
	    (errno != EPERM || (service_page_release_left_page(writer->path),
				rename(writer->temporary, writer->path) != 0))) {
		snprintf(error, error_len, "cannot name the page %s: %s", writer->path,
			 strerror(errno));
		return false;
	}
	writer->temporary[0] = '\0';
	writer->published = true;
	/* After the rename, which the flag would refuse. A sealed page needs
	 * none; root's file without the flag (a service without
	 * CAP_LINUX_IMMUTABLE, a file system without it) is one that only
	 * root could shrink. */
	writer->append_only =
	    !writer->sealed && service_page_set_append_only(writer->page_fd, true);
	return true;
}

void service_page_remove(struct service_page_writer *writer)
{
	struct stat st;

	if (writer->temporary[0] != '\0')
		unlink(writer->temporary);
	if (writer->append_only && service_page_set_append_only(writer->page_fd, false))
		writer->append_only = false;
	if (writer->published && stat(writer->path, &st) == 0 && st.st_dev == writer->device &&
	    st.st_ino == writer->inode)
		unlink(writer->path);
	writer->published = false;
	writer->temporary[0] = '\0';
	/* The page's write lock goes with its descriptor: after its name. */
	if (writer->page_fd >= 0) {
		close(writer->page_fd);
		writer->page_fd = -1;
	}
	/* Removed while held, and only while the name is still this lock's
	 * (never another service's, which took a new one after this one's was
	 * removed by hand): a service starting meanwhile that opened this file
	 * finds its name gone and makes its own (service_page_lock). */
	if (writer->lock_fd >= 0) {
		if (service_page_same_file(writer->lock_fd, writer->lock))
			unlink(writer->lock);
		close(writer->lock_fd);
		writer->lock_fd = -1;
	}
}
