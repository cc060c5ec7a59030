/* SPDX-License-Identifier: MIT */
/*
 * age-cmd.h - the sigil command's age parts (docs/age.md): pubkey --format
 * age|age-identity, import --format age, import --wrapped, export --to
 */
#ifndef SIGIL_CLIENT_AGE_CMD_H
#define SIGIL_CLIENT_AGE_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sigil/client.h>

/* the HRPs (lowercase) of age recipients, secret keys and sigil identities */
#define AGE_HRP_RECIPIENT "age"
#define AGE_HRP_SECRET "age-secret-key-"
#define AGE_HRP_IDENTITY "age-plugin-sigil-"

/**
 * age_cmd_pubkey_text() - the text of pubkey --format age (the "age1..."
 * recipient and a newline) or age-identity (a comment line with the
 * recipient, then "AGE-PLUGIN-SIGIL-1..." of the label). malloc'd; NULL
 * when out of memory.
 */
char *age_cmd_pubkey_text(const sigil_key_info *k, bool identity);
/**
 * age_cmd_parse_secret() - the scalar of an age-keygen key file: one
 * "AGE-SECRET-KEY-1..." line, comment (#) and empty lines skipped.
 * @seed is written on success only. Return: 0, or -1 with *whyp set.
 */
int age_cmd_parse_secret(uint8_t seed[32], const uint8_t *text, size_t len, const char **whyp);
/* export with --to: true when argv asks for it (then age_cmd_export runs it) */
bool age_cmd_is_export(int argc, char **argv);
int age_cmd_export(int argc, char **argv);
/* import with --wrapped: likewise */
bool age_cmd_is_import_wrapped(int argc, char **argv);
int age_cmd_import_wrapped(int argc, char **argv);

#endif /* SIGIL_CLIENT_AGE_CMD_H */
