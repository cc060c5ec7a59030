/* SPDX-License-Identifier: MIT */
/* proc.c - a process's state and CPU time from /proc/PID/stat (proc(5)). */
#include <stdio.h>
#include <string.h>

#include "harness.h"

int th_proc_stat(int pid, char *state, long long *cpu_ticks)
{
	char path[64], buf[1024];
	const char *p;
	long long ut = 0, st = 0;
	char s = '?';
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: fields resume
	 * after the last ')' with the state (field 3); utime and stime are
	 * fields 14 and 15 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &s, &ut, &st) != 3)
		return -1;
	if (state)
		*state = s;
	if (cpu_ticks)
		*cpu_ticks = ut + st;
	return 0;
}
