/** True on macOS (and iPadOS), where the primary modifier is Command rather than Control. */
export function isMac(): boolean {
  if (typeof navigator === 'undefined') return false;
  const uaData = (navigator as Navigator & { userAgentData?: { platform?: string } })
    .userAgentData;
  const platform = uaData?.platform ?? navigator.platform ?? '';
  return /mac|iphone|ipad/i.test(platform);
}
