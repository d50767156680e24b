/* udptool: the lab's tiny static UDP sender/receiver (built with gcc -static, runs as PID-1's child in the guest).
 *
 *   udptool send DST_IP PORT GSO_SIZE DELAY_US SIZE...   one datagram per SIZE (payload bytes); GSO_SIZE > 0 sets
 *                                                        UDP_SEGMENT so the stack builds one GSO skb per SIZE
 *   udptool recv PORT SECONDS                            counts datagrams until SECONDS pass with nothing new
 *   udptool burst DST_IP PORT SIZE COUNT                 COUNT datagrams of SIZE bytes back to back, each
 *                                                        carrying its sequence number (u32, network order)
 *                                                        then the byte pattern (seq + i) & 0xff
 *   udptool recvlog PORT SECONDS SRC_IP SRC_PORT SIZE    receives burst datagrams; a datagram is intact when its
 *                                                        source is SRC_IP:SRC_PORT (the NAT address), its length
 *                                                        SIZE and its pattern right (the kernel has already
 *                                                        verified the UDP checksum); prints a summary and the
 *                                                        sequence numbers of the intact ones
 *   udptool blast DST_IP PORT SIZE SECONDS               sendmmsg() SIZE-byte datagrams for SECONDS (rate test)
 *   udptool mark start|stop                              executes the lab's marker instruction: a 9-byte NOP
 *                                                        that the lab's QEMU TCG plugin recognises
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

static char buf[65536];

static int udp_to(const char *ip, int port, struct sockaddr_in *dst)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), big = 1 << 22;
	memset(dst, 0, sizeof(*dst));
	dst->sin_family = AF_INET;
	dst->sin_port = htons(port);
	if (fd < 0 || inet_pton(AF_INET, ip, &dst->sin_addr) != 1) { perror("socket"); exit(2); }
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	return fd;
}

static void fill(char *p, uint32_t seq, int n)
{
	uint32_t be = htonl(seq);
	memcpy(p, &be, 4);
	for (int i = 4; i < n; i++) p[i] = (char)((seq + i) & 0xff);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst;
	if (argc >= 6 && !strcmp(argv[1], "send")) {
		int fd = udp_to(argv[2], atoi(argv[3]), &dst);
		int gso = atoi(argv[4]), delay = atoi(argv[5]), sent = 0, failed = 0;
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
	if (argc == 6 && !strcmp(argv[1], "burst")) {
		int fd = udp_to(argv[2], atoi(argv[3]), &dst);
		int size = atoi(argv[4]), count = atoi(argv[5]), sent = 0, failed = 0;
		for (int i = 0; i < count; i++) {
			fill(buf, (uint32_t)i, size);
			if (sendto(fd, buf, size, 0, (struct sockaddr *)&dst, sizeof(dst)) == size) sent++;
			else failed++;
		}
		printf("udptool sent=%d failed=%d\n", sent, failed);
		return 0;
	}
	if (argc == 7 && !strcmp(argv[1], "recvlog")) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0), on = 1 << 24, size = atoi(argv[6]);
		struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) }, from;
		struct timeval tv = { .tv_sec = atoi(argv[3]) };
		struct in_addr want;
		int want_port = atoi(argv[5]), total = 0, intact = 0, bad_payload = 0, other_src = 0;
		static int intact_seq[1 << 16];
		char seen_src[8][40];
		int seen_n[8] = { 0 }, nseen = 0;
		if (inet_pton(AF_INET, argv[4], &want) != 1) return 2;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &on, sizeof(on));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0) { perror("bind"); return 2; }
		for (;;) {
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			if (n < 0) break;
			total++;
			char src[40];
			snprintf(src, sizeof(src), "%s:%d", inet_ntoa(from.sin_addr), ntohs(from.sin_port));
			int k;
			for (k = 0; k < nseen && strcmp(seen_src[k], src); k++);
			if (k == nseen && nseen < 8) { strcpy(seen_src[nseen], src); nseen++; }
			if (k < 8) seen_n[k]++;
			uint32_t be, seq;
			memcpy(&be, buf, 4);
			seq = ntohl(be);
			int ok = n == size;
			for (int i = 4; ok && i < n; i++) ok = buf[i] == (char)((seq + i) & 0xff);
			if (!ok) { bad_payload++; continue; }
			if (from.sin_addr.s_addr != want.s_addr || ntohs(from.sin_port) != want_port) { other_src++; continue; }
			if (intact < (1 << 16)) intact_seq[intact] = (int)seq;
			intact++;
		}
		printf("udptool received=%d intact=%d other_source=%d bad_payload=%d\n", total, intact, other_src, bad_payload);
		for (int k = 0; k < nseen; k++) printf("source %s %d\n", seen_src[k], seen_n[k]);
		printf("intact_seq");
		for (int i = 0; i < intact && i < (1 << 16); i++) printf(" %d", intact_seq[i]);
		printf("\n");
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "blast")) {
		enum { BATCH = 64 };
		int fd = udp_to(argv[2], atoi(argv[3]), &dst);
		int size = atoi(argv[4]);
		double secs = atof(argv[5]), t0 = now(), t1;
		long sent = 0;
		struct mmsghdr msgs[BATCH];
		struct iovec iov[BATCH];
		memset(buf, 'x', sizeof(buf));
		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < BATCH; i++) {
			iov[i].iov_base = buf;
			iov[i].iov_len = size;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &dst;
			msgs[i].msg_hdr.msg_namelen = sizeof(dst);
		}
		while ((t1 = now()) - t0 < secs) {
			int r = sendmmsg(fd, msgs, BATCH, 0);
			if (r > 0) sent += r;
		}
		printf("udptool blast sent=%ld seconds=%.3f\n", sent, t1 - t0);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "mark")) {
		/* nopw 0x5a51(%rax,%rax,1) / nopw 0x5a52(%rax,%rax,1): 66 0f 1f 84 00 5X 5a 00 00 */
		if (!strcmp(argv[2], "start"))
			__asm__ volatile(".byte 0x66,0x0f,0x1f,0x84,0x00,0x51,0x5a,0x00,0x00");
		else
			__asm__ volatile(".byte 0x66,0x0f,0x1f,0x84,0x00,0x52,0x5a,0x00,0x00");
		return 0;
	}
	fprintf(stderr, "usage: udptool send|recv|burst|recvlog|blast|mark ... (see the source)\n");
	return 64;
}
