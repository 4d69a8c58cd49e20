/*
 * worker_main: the worker process of a backend (`acceld worker BACKEND [SETTINGS]`, a command help does not list):
 * what the daemon's proxy (worker_proxy.h) starts, running the real backend's open, run, close and inspect for the
 * devices the daemon sends it, one thread per channel. It runs only with the control socket the daemon gives it on
 * descriptor 3.
 */
#ifndef ACCELD_WORKER_MAIN_H
#define ACCELD_WORKER_MAIN_H

/* The command: argv[0] "worker", argv[1] the backend, then settings. Returns the exit status. */
int worker_main(int argc, char **argv);

#endif
