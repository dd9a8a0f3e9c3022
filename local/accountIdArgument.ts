import { MAX_ACCOUNT_ID_LENGTH } from '../shared/auth/sessionVerifier';

/** What the operator tools say an account id is. */
export const ACCOUNT_ID_RULE = `accountId is 1 to ${MAX_ACCOUNT_ID_LENGTH} characters`;

/**
 * Whether a command-line argument names an account as a session token may (1 to MAX_ACCOUNT_ID_LENGTH characters);
 * an option such as `--help` is none.
 */
export const isAccountIdArgument = (id: string | undefined): id is string =>
  !!id && id.length <= MAX_ACCOUNT_ID_LENGTH && !id.startsWith('-');
