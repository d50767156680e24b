/* udptool: the lab's tiny static UDP sender/receiver (built with gcc -static, runs as PID-1's child in the guest).
 *
 *   udptool send DST_IP PORT GSO_SIZE DELAY_US SIZE...   one datagram per SIZE (payload bytes); GSO_SIZE > 0 sets
 *                                                        UDP_SEGMENT so the stack builds one GSO skb per SIZE
 *   udptool recv PORT SECONDS                            counts datagrams until SECONDS pass with nothing new
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

static char buf[65536];

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "send")) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[3])) };
		int gso = atoi(argv[4]), delay = atoi(argv[5]), sent = 0, failed = 0;
		if (fd < 0 || inet_pton(AF_INET, argv[2], &dst.sin_addr) != 1) { perror("socket"); return 2; }
		if (gso > 0 && setsockopt(fd, SOL_UDP, UDP_SEGMENT, &gso, sizeof(gso)) < 0) { perror("UDP_SEGMENT"); return 3; }
		memset(buf, 'x', sizeof(buf));
		for (int i = 6; i < argc; i++) {
			int n = atoi(argv[i]);
			if (sendto(fd, buf, n, 0, (struct sockaddr *)&dst, sizeof(dst)) == n) sent++;
			else { failed++; fprintf(stderr, "sendto %d: %s\n", n, strerror(errno)); }
			if (delay) usleep(delay);
		}
		printf("udptool sent=%d failed=%d\n", sent, failed);
		return failed ? 1 : 0;
	}
	if (argc == 4 && !strcmp(argv[1], "recv")) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0), count = 0, on = 1 << 22;
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };
		struct timeval tv = { .tv_sec = atoi(argv[3]) };
		long bytes = 0;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &on, sizeof(on));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0) { perror("bind"); return 2; }
		for (;;) {
			ssize_t n = recv(fd, buf, sizeof(buf), 0);
			if (n < 0) break;
			count++; bytes += n;
		}
		printf("udptool received=%d bytes=%ld\n", count, bytes);
		return 0;
	}
	fprintf(stderr, "usage: udptool send DST PORT GSO DELAY_US SIZE... | udptool recv PORT SECONDS\n");
	return 64;
}
