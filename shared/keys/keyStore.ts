/** What the key store records about one API key (never its value). */
export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  last4: string;
  isActive: boolean;
  createdAt: number;
  lastUsed: number | null;
}

/** What authenticating a key needs: one strongly consistent read by the key's hash. */
export interface KeyIdentity {
  accountId: string;
  keyId: string;
  isActive: boolean;
}

export interface NewKey {
  id: string;
  accountId: string;
  name: string;
  keyHash: string;
  last4: string;
  createdAt: number;
  /** The key's signing secret for signed links, sealed by the SecretCipher (never the plaintext). */
  sealedSigningSecret: string;
}

/** What verifying a signed link needs: who the key belongs to, whether it works, and its sealed signing secret. */
export interface SigningKey {
  identity: KeyIdentity;
  sealedSigningSecret: string;
}

/** Port for API-key persistence; `shared/store/dynamoKeyStore.ts` is the DynamoDB adapter. */
export interface KeyStore {
  /**
   * Stores a new key unless the account already holds `maxKeys` (then undefined). Whether it works: the owner may
   * revoke it while it is being created.
   */
  create(key: NewKey, maxKeys: number): Promise<{ isActive: boolean } | undefined>;
  /** The account's keys, newest first. */
  list(accountId: string): Promise<ApiKeyRecord[]>;
  /** The account's key, or undefined when it does not exist or belongs to someone else. */
  get(accountId: string, keyId: string): Promise<ApiKeyRecord | undefined>;
  /** Marks the key inactive; false when the account has no such key. */
  revoke(accountId: string, keyId: string): Promise<boolean>;
  /** Removes the key for good; false when the account has no such key. */
  delete(accountId: string, keyId: string): Promise<boolean>;
  findByHash(keyHash: string): Promise<KeyIdentity | undefined>;
  /** The key of a signed link by its id, with strongly consistent reads; undefined when it is deleted or unknown. */
  findSigningKey(keyId: string): Promise<SigningKey | undefined>;
  /**
   * The identity of an account's key by its id, as its authentication item says (strongly consistent): what decides
   * whether a queued job's key still works. Every key has that item; keys made before signed links have no signing
   * item, and their jobs failed `401` when it was asked instead (red team, round 28).
   */
  findById(accountId: string, keyId: string): Promise<KeyIdentity | undefined>;
  /** Records use of a key; implementations may coalesce writes (docs/api.md allows 60 s of lag). */
  touchLastUsed(identity: KeyIdentity, now: number): Promise<void>;
}
