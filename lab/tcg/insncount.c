/* insncount: a QEMU TCG plugin that counts guest instructions per vCPU between two marker instructions.
 *
 * Built by lab/rate.py with `gcc -shared -fPIC -O2`; loaded with `-plugin lab/work/insncount.so -d plugin
 * -D LOG`. Debian's QEMU 7.2 is built with plugin support but ships no plugins and no qemu-plugin.h, so the
 * few entry points used are declared here from QEMU 7.2's documented plugin API (QEMU_PLUGIN_VERSION 1).
 *
 * Every translated block gets an execution callback that adds its instruction count to its vCPU's counter
 * (a callback, not an inline add: with MTTCG an inline add to one shared counter would race). The guest's
 * `udptool mark start|stop` executes a 9-byte NOP (nopw 0x5a51/0x5a52(%rax,%rax,1)); when one executes, the
 * plugin writes "insncount <start|stop> vcpu=N counts=c0,c1,..." to QEMU's log.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct {
	const char *target_name;
	struct { int min; int cur; } version;
	bool system_emulation;
	union { struct { int smp_vcpus; int max_vcpus; } system; };
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_VCPUS 16
static volatile uint64_t counts[MAX_VCPUS];
static int nvcpus = 1;
static const unsigned char MARK[7] = { 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x5a };

static void tb_exec(unsigned int vcpu, void *udata)
{
	if (vcpu < MAX_VCPUS)
		counts[vcpu] += (uintptr_t)udata;
}

static void mark_exec(unsigned int vcpu, void *udata)
{
	char line[64 + 24 * MAX_VCPUS];
	int n = snprintf(line, sizeof(line), "insncount %s vcpu=%u counts=", (uintptr_t)udata == 1 ? "start" : "stop",
			 vcpu);
	for (int i = 0; i < nvcpus && n < (int)sizeof(line) - 24; i++)
		n += snprintf(line + n, sizeof(line) - n, "%s%" PRIu64, i ? "," : "", counts[i]);
	snprintf(line + n, sizeof(line) - n, "\n");
	qemu_plugin_outs(line);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const unsigned char *b = qemu_plugin_insn_data(insn);
		if (qemu_plugin_insn_size(insn) != 9 || memcmp(b, MARK, 5) || b[6] != 0x5a || b[7] || b[8])
			continue;
		if (b[5] == 0x51 || b[5] == 0x52)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_exec, QEMU_PLUGIN_CB_NO_REGS,
								(void *)(uintptr_t)(b[5] - 0x50));
	}
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (info->system_emulation)
		nvcpus = info->system.smp_vcpus < MAX_VCPUS ? info->system.smp_vcpus : MAX_VCPUS;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
