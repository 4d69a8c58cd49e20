/*
 * signals: termination signals turned into something the main loop can wait for.
 *
 * Libraries may start threads before main() (OpenBLAS does, in a constructor), so blocking signals in main cannot
 * keep them off other threads. Instead a handler writes the signal number to a self-pipe, whichever thread takes
 * it; signals_wait reads it. This is process-wide state by nature, hence the file-level variables.
 */
#ifndef ACCELD_SIGNALS_H
#define ACCELD_SIGNALS_H

/* Installs the SIGTERM/SIGINT handlers and ignores SIGPIPE. Returns 0, or -1 with errno set. */
int signals_init(void);

/* Waits up to timeout_ms for SIGTERM or SIGINT; returns the signal number, or 0 when none came. */
int signals_wait(int timeout_ms);

#endif
